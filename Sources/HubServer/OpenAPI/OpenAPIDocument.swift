/// The OpenAPI 3.1 document served at `/openapi.yaml`; docs/openapi.yaml is the same text
/// (`modem-hub openapi > docs/openapi.yaml` writes it; a test checks they agree).
public enum OpenAPIDocument {
    public static let yaml = #"""
openapi: 3.1.0
info:
  title: modem-hub
  version: 0.1.0
paths: {}
"""#
}
