"""`flowscope record`: a Spark event log written as a progress log, in this process or a child one."""
