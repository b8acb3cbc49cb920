"""What the suites under tests/ share, registered once by tests/conftest.py: the fixtures
(fixtures), the oxbowd harness (server), Flight calls (flight), batch makers (batches), Kafka
clients (kafka), the primary-key model (primary_keys), users and certificates (auth), lake
helpers and readers (lake, readers), type samples, the nested model, the REST suite's rows, the S3
test server and the cold-log helpers."""
