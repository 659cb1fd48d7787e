"""`flowscope fleet`: many applications' event logs through the Spark model and the tracker, on Spark.

`analyze` turns one application's log into rows (plain Python), `job` is the PySpark job that runs it once per
application and writes the Parquet tables, `report` the HTML page over them.
"""
