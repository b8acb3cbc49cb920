"""What the suites under tests/ share: the oxbowd harness (server), Flight helpers (flight), batch
makers (batches), lake (lake, readers), Kafka (kafka) and S3 (s3_server, cold_log)
helpers, and the fixtures (fixtures), which tests/conftest.py registers."""
