"""What a Spark application's tasks say: their time split, findings and thresholds, blame's Spark side, the cores
what-if."""
