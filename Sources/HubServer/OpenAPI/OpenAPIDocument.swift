/// The OpenAPI 3.1 document served at `/openapi.yaml`: docs/openapi.yaml, byte for byte, compiled into the
/// binary by SwiftPM (`.embedInCode` on `OpenAPI/openapi.yaml`, a link to that file). `modem-hub openapi`
/// prints it; tests check that the served bytes are the file's and that the document's operations are the
/// routes served.
public enum OpenAPIDocument {
    /// The document's bytes, exactly as in docs/openapi.yaml.
    public static var bytes: [UInt8] { PackageResources.openapi_yaml }

    /// The document as text (UTF-8).
    public static let yaml = String(decoding: PackageResources.openapi_yaml, as: UTF8.self)
}
