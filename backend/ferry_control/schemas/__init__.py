"""The API's pydantic v2 shapes: request bodies and responses, with examples (the OpenAPI schema is a product)."""
