"""Chat models for the harness: an OpenAI-compatible client and record/replay cassettes."""
