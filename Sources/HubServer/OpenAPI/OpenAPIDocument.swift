/// The OpenAPI 3.1 document served at `/openapi.yaml`: the text of docs/openapi.yaml (`modem-hub openapi`
/// prints it; a test checks they agree and that the document's operations are the routes served).
public enum OpenAPIDocument {
    public static let yaml = ##"""
openapi: 3.1.0
info:
  title: modem-hub
  version: 1.0.0
  summary: Groups with presence behind an OAuth2 API (SwiftModem's hub).
  description: |
    Every `/v1` answer is JSend (`{"status":"success"|"fail"|"error", ...}`); lists add `limit` and `more`
    (the hub API's conventions). Tokens come from the OAuth2 endpoints (RFC 6749): `POST /oauth/token`
    (grants `client_credentials`, `password` for permitted clients, `refresh_token`, rotated) and
    `POST /oauth/revoke` (RFC 7009), both `application/x-www-form-urlencoded` with client authentication by
    HTTP Basic or `client_id`/`client_secret` in the body; they are described by the `oauth2` security scheme
    and by `/.well-known/oauth-authorization-server` (RFC 8414) rather than as operations. Resource requests
    carry `Authorization: Bearer TOKEN` (RFC 6750; never in the query string).

    Groups with presence (the groups API) also run over a WebSocket at `GET /v1/socket` (Bearer token at the
    upgrade; text frames of JSON: `{"op":"hello"}`, `join`, `listen`, `leave`, `post`, `unpost`, `update`;
    events `{"type":"user",...}` and `{"type":"post",...}`), which is not an HTTP operation and so is not
    listed under `paths`. See docs/hub-plan.md.
  license:
    name: MIT
servers:
  - url: /
security:
  - bearerAuth: []
  - oauth2: [hub]
paths:
  /.well-known/oauth-authorization-server:
    get:
      operationId: getAuthorizationServerMetadata
      summary: OAuth 2.0 authorization server metadata (RFC 8414).
      security: []
      responses:
        "200":
          description: The metadata.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/ServerMetadata"}
  /openapi.yaml:
    get:
      operationId: getOpenAPIDocument
      summary: This document.
      security: []
      responses:
        "200":
          description: The OpenAPI document.
          content:
            application/yaml:
              schema: {type: string}
  /v1/accounts:
    post:
      operationId: createAccount
      summary: Start a sign-up; a confirmation code is delivered out of band.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/NewAccount"}
      responses:
        "202": {$ref: "#/components/responses/Pending"}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "409": {$ref: "#/components/responses/Conflict"}
        "413": {$ref: "#/components/responses/TooLarge"}
        "415": {$ref: "#/components/responses/UnsupportedMediaType"}
        "500": {$ref: "#/components/responses/ServerError"}
  /v1/accounts/confirm:
    post:
      operationId: confirmRegistration
      summary: Confirm a sign-up with its code; answers tokens issued to the calling client.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Confirmation"}
      responses:
        "200": {$ref: "#/components/responses/Tokens"}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "404": {$ref: "#/components/responses/NotFound"}
        "413": {$ref: "#/components/responses/TooLarge"}
        "415": {$ref: "#/components/responses/UnsupportedMediaType"}
        "500": {$ref: "#/components/responses/ServerError"}
  /v1/accounts/forgot:
    post:
      operationId: forgotLogin
      summary: Ask for a password reset code (202 whether or not the account exists).
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Forgot"}
      responses:
        "202": {$ref: "#/components/responses/Pending"}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "413": {$ref: "#/components/responses/TooLarge"}
        "415": {$ref: "#/components/responses/UnsupportedMediaType"}
        "500": {$ref: "#/components/responses/ServerError"}
  /v1/accounts/reset:
    post:
      operationId: resetPassword
      summary: Set a new password with a reset code; every earlier refresh token of the account is revoked.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Reset"}
      responses:
        "200": {$ref: "#/components/responses/Tokens"}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "404": {$ref: "#/components/responses/NotFound"}
        "413": {$ref: "#/components/responses/TooLarge"}
        "415": {$ref: "#/components/responses/UnsupportedMediaType"}
        "500": {$ref: "#/components/responses/ServerError"}
  /v1/users/me:
    get:
      operationId: getMe
      summary: Who the token acts for.
      responses:
        "200":
          description: The acting user.
          content:
            application/json:
              schema:
                type: object
                required: [status, data]
                properties:
                  status: {const: success}
                  data: {$ref: "#/components/schemas/Me"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "500": {$ref: "#/components/responses/ServerError"}
  /v1/users/me/userload:
    put:
      operationId: putUserload
      summary: Replace the acting user's userload; fanned out to every group the user joined.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/Load"}
      responses:
        "200":
          description: The stored userload.
          content:
            application/json:
              schema:
                type: object
                required: [status, data]
                properties:
                  status: {const: success}
                  data:
                    type: object
                    required: [user, userload]
                    properties:
                      user: {type: string}
                      userload: {type: object}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "413": {$ref: "#/components/responses/TooLarge"}
        "415": {$ref: "#/components/responses/UnsupportedMediaType"}
        "500": {$ref: "#/components/responses/ServerError"}
  /v1/groups/{group}/members:
    parameters:
      - {$ref: "#/components/parameters/Group"}
    get:
      operationId: listMembers
      summary: The group's members with presence (timestamp 0 online, else last seen in Unix milliseconds).
      parameters:
        - {$ref: "#/components/parameters/Limit"}
        - {$ref: "#/components/parameters/Skip"}
      responses:
        "200":
          description: A page of members, by user id.
          content:
            application/json:
              schema:
                allOf:
                  - {$ref: "#/components/schemas/ListEnvelope"}
                  - properties:
                      data:
                        type: array
                        items: {$ref: "#/components/schemas/Member"}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "404": {$ref: "#/components/responses/NotFound"}
        "500": {$ref: "#/components/responses/ServerError"}
  /v1/groups/{group}/posts:
    parameters:
      - {$ref: "#/components/parameters/Group"}
    get:
      operationId: listPosts
      summary: The group's kept posts, by time and pid.
      parameters:
        - {$ref: "#/components/parameters/Limit"}
        - {$ref: "#/components/parameters/Skip"}
      responses:
        "200":
          description: A page of posts.
          content:
            application/json:
              schema:
                allOf:
                  - {$ref: "#/components/schemas/ListEnvelope"}
                  - properties:
                      data:
                        type: array
                        items: {$ref: "#/components/schemas/Post"}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "404": {$ref: "#/components/responses/NotFound"}
        "500": {$ref: "#/components/responses/ServerError"}
    post:
      operationId: createPost
      summary: Post (or replace one's own post with the same pid); kept until unposted.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: "#/components/schemas/NewPost"}
      responses:
        "200":
          description: The author's post with this pid was replaced.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/PostEnvelope"}
        "201":
          description: Posted.
          headers:
            Location:
              description: The post's URL.
              schema: {type: string}
          content:
            application/json:
              schema: {$ref: "#/components/schemas/PostEnvelope"}
          links:
            GetPost:
              operationId: getPost
              parameters:
                group: $request.path.group
                pid: $response.body#/data/pid
            DeletePost:
              operationId: deletePost
              parameters:
                group: $request.path.group
                pid: $response.body#/data/pid
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "404": {$ref: "#/components/responses/NotFound"}
        "413": {$ref: "#/components/responses/TooLarge"}
        "415": {$ref: "#/components/responses/UnsupportedMediaType"}
        "500": {$ref: "#/components/responses/ServerError"}
  /v1/groups/{group}/posts/{pid}:
    parameters:
      - {$ref: "#/components/parameters/Group"}
      - {$ref: "#/components/parameters/Pid"}
    get:
      operationId: getPost
      summary: One kept post.
      responses:
        "200":
          description: The post.
          content:
            application/json:
              schema: {$ref: "#/components/schemas/PostEnvelope"}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "404": {$ref: "#/components/responses/NotFound"}
        "500": {$ref: "#/components/responses/ServerError"}
    delete:
      operationId: deletePost
      summary: Unpost (only by its author); newcomers no longer receive it.
      responses:
        "200":
          description: Removed.
          content:
            application/json:
              schema:
                type: object
                required: [status, data]
                properties:
                  status: {const: success}
                  data: {type: "null"}
        "400": {$ref: "#/components/responses/BadRequest"}
        "401": {$ref: "#/components/responses/Unauthorized"}
        "403": {$ref: "#/components/responses/Forbidden"}
        "404": {$ref: "#/components/responses/NotFound"}
        "500": {$ref: "#/components/responses/ServerError"}
components:
  securitySchemes:
    bearerAuth:
      type: http
      scheme: bearer
      description: An access token from POST /oauth/token (RFC 6750, header only).
    oauth2:
      type: oauth2
      description: |
        POST /oauth/token and POST /oauth/revoke (RFC 6749, RFC 7009). Client authentication by HTTP Basic
        (client_secret_basic) or form fields (client_secret_post). Access tokens live 600 s; refresh tokens
        14 days and are rotated on every use (a reused one revokes its family).
      flows:
        clientCredentials:
          tokenUrl: /oauth/token
          refreshUrl: /oauth/token
          scopes: {hub: The hub's API}
        password:
          tokenUrl: /oauth/token
          refreshUrl: /oauth/token
          scopes: {hub: The hub's API}
  parameters:
    Group:
      name: group
      in: path
      required: true
      description: A group name (quotes, wildcards and dots are plain data).
      schema: {$ref: "#/components/schemas/Name"}
    Pid:
      name: pid
      in: path
      required: true
      description: A post id within the group.
      schema: {$ref: "#/components/schemas/Name"}
    Limit:
      name: limit
      in: query
      required: false
      schema: {type: integer, minimum: 1, maximum: 1000, default: 25}
    Skip:
      name: skip
      in: query
      required: false
      schema: {type: integer, minimum: 0, maximum: 1000000000, default: 0}
  headers:
    WWWAuthenticate:
      description: The Bearer challenge (RFC 6750), with error="invalid_token" for a refused token.
      schema: {type: string}
  responses:
    Pending:
      description: Accepted; a code is on its way out of band.
      content:
        application/json:
          schema:
            type: object
            required: [status, data]
            properties:
              status: {const: success}
              data:
                type: object
                required: [pending]
                properties:
                  pending: {const: true}
    Tokens:
      description: A standard token object (RFC 6749 section 5.1) inside JSend `data`.
      content:
        application/json:
          schema:
            type: object
            required: [status, data]
            properties:
              status: {const: success}
              data: {$ref: "#/components/schemas/TokenObject"}
    BadRequest:
      description: The request's data breaks the schema (names the field where it can).
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Fail"}
    Unauthorized:
      description: No, an unknown, an expired or a revoked Bearer token.
      headers:
        WWW-Authenticate: {$ref: "#/components/headers/WWWAuthenticate"}
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Fail"}
    Forbidden:
      description: Another user's post.
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Fail"}
    NotFound:
      description: No such resource or code.
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Fail"}
    Conflict:
      description: The name is taken.
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Fail"}
    TooLarge:
      description: The body is over 1 MiB.
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Fail"}
    UnsupportedMediaType:
      description: The body is not application/json.
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Fail"}
    ServerError:
      description: The server failed.
      content:
        application/json:
          schema: {$ref: "#/components/schemas/Error"}
  schemas:
    Name:
      type: string
      pattern: "^[A-Za-z0-9._~:@!$'()*+,;=-]{1,64}$"
      not: {enum: [".", ".."]}
    Username:
      type: string
      pattern: "^[A-Za-z0-9._-]{1,64}$"
    Password:
      type: string
      minLength: 8
      maxLength: 256
    Code:
      type: string
      pattern: "^[0-9]{8}$"
    Load:
      type: object
      description: Any JSON object of at most 64 members and 16 KiB, kept and sent back as the exact text received.
      maxProperties: 64
    NewAccount:
      type: object
      additionalProperties: false
      required: [username, password, contact]
      properties:
        username: {$ref: "#/components/schemas/Username"}
        password: {$ref: "#/components/schemas/Password"}
        contact: {type: string, minLength: 1, maxLength: 256}
    Confirmation:
      type: object
      additionalProperties: false
      required: [username, code]
      properties:
        username: {$ref: "#/components/schemas/Username"}
        code: {$ref: "#/components/schemas/Code"}
    Forgot:
      type: object
      additionalProperties: false
      required: [username]
      properties:
        username: {$ref: "#/components/schemas/Username"}
    Reset:
      type: object
      additionalProperties: false
      required: [username, code, password]
      properties:
        username: {$ref: "#/components/schemas/Username"}
        code: {$ref: "#/components/schemas/Code"}
        password: {$ref: "#/components/schemas/Password"}
    NewPost:
      type: object
      additionalProperties: false
      required: [pid, pidload]
      properties:
        pid: {$ref: "#/components/schemas/Name"}
        pidload: {$ref: "#/components/schemas/Load"}
    Post:
      type: object
      description: The groups API's post event without its `type`.
      required: [group, pid, pidload, timestamp, user]
      properties:
        group: {type: string}
        pid: {type: string}
        pidload: {type: object}
        timestamp: {type: integer}
        user: {type: string}
    PostEnvelope:
      type: object
      required: [status, data]
      properties:
        status: {const: success}
        data: {$ref: "#/components/schemas/Post"}
    Member:
      type: object
      required: [user, timestamp, userload]
      properties:
        user: {type: string}
        timestamp: {type: integer, description: "0 online, else last seen (Unix ms)"}
        userload: {type: object}
    Me:
      type: object
      required: [user, kind, client_id]
      properties:
        user: {type: string}
        kind: {enum: [account, device, client]}
        name: {type: string}
        client_id: {type: string}
    TokenObject:
      type: object
      required: [access_token, token_type, expires_in]
      properties:
        access_token: {type: string}
        token_type: {const: Bearer}
        expires_in: {type: integer}
        refresh_token: {type: string}
        scope: {type: string}
    ServerMetadata:
      type: object
      required: [issuer, token_endpoint, revocation_endpoint, grant_types_supported, response_types_supported]
      properties:
        issuer: {type: string}
        token_endpoint: {type: string}
        revocation_endpoint: {type: string}
        grant_types_supported: {type: array, items: {type: string}}
        token_endpoint_auth_methods_supported: {type: array, items: {type: string}}
        revocation_endpoint_auth_methods_supported: {type: array, items: {type: string}}
        response_types_supported: {type: array, items: {type: string}}
        scopes_supported: {type: array, items: {type: string}}
        service_documentation: {type: string}
    ListEnvelope:
      type: object
      required: [status, limit, more, data]
      properties:
        status: {const: success}
        limit: {type: integer}
        more: {type: boolean}
        data: {type: array}
    Fail:
      type: object
      required: [status, data]
      properties:
        status: {const: fail}
        data:
          type: object
          required: [message]
          properties:
            message: {type: string}
            field: {type: string}
    Error:
      type: object
      required: [status, message]
      properties:
        status: {const: error}
        message: {type: string}
"""##
}
