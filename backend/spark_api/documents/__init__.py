"""The History Server's REST documents, one family per module, each a function of an application's
:class:`~backend.spark_api.app_state.AppState` that returns the JSON Spark returns (absent fields where Spark's are
``None``)."""
