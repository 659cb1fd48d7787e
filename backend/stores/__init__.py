"""Where logs live: local paths and object-store URLs (s3://, s3a://, gs://, abfs://, az://, hdfs://) read through
fsspec."""
