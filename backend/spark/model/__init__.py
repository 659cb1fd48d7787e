"""The Spark model: a Spark application's listener events, decoded and checked, as scopes, operators, edges and
batches."""
