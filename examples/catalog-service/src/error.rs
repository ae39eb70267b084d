//! Errors as HTTP answers: each of docrel's errors a client can cause gets
//! its status code and words the client can act on; docrel's own message
//! (collections, indexes, the server's reason, the fix in code) is for the
//! developer and goes to the log, never to the client.

use axum::extract::rejection::JsonRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

// ANCHOR: error
/// An error answer: its status, and a message sent as `{"error": message}`.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    /// 400: the request itself is wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::BAD_REQUEST, message: message.into() }
    }

    /// 404: nothing has this id.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::NOT_FOUND, message: message.into() }
    }

    /// 409: the request conflicts with what is stored.
    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError { status: StatusCode::CONFLICT, message: message.into() }
    }
}

impl From<docrel::Error> for ApiError {
    fn from(e: docrel::Error) -> Self {
        use docrel::Error as E;
        let (status, message) = match &e {
            // The write landed and copies of it are stale: not the client's
            // doing, whatever the cause (a duplicate key in a copy included).
            E::FanOut { .. } => (StatusCode::INTERNAL_SERVER_ERROR, "internal error".into()),
            // A unique index (`#[document(unique)]`, or the `_id`) already
            // has this value; a handler that knows the field says which.
            _ if e.is_duplicate_key() => {
                (StatusCode::CONFLICT, "a record with this unique value already exists".into())
            }
            E::NotFound { .. } => (StatusCode::NOT_FOUND, "not found".into()),
            // `on_delete = restrict`: other documents still refer to this one.
            E::StillReferenced { count, .. } => (
                StatusCode::CONFLICT,
                format!("still referred to by {count} other record(s): remove those references first"),
            ),
            // A bound (`max = 50`) or the 16 MiB limit: nothing was written.
            E::EmbedFull { max, .. } => {
                (StatusCode::BAD_REQUEST, format!("a list holds at most {max} entries; nothing was written"))
            }
            E::DocumentTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, "the record would be too large to store; nothing was written".into())
            }
            // The server is away or stepping down: the client may retry (a
            // write may have landed: retry only what is idempotent).
            _ if e.is_transient() => (StatusCode::SERVICE_UNAVAILABLE, "temporarily unavailable: try again".into()),
            _ => (StatusCode::INTERNAL_SERVER_ERROR, "internal error".into()),
        };
        if status.is_server_error() {
            // Collections, ids and the server's words are for the log.
            eprintln!("catalog-service: {} error: {e}", e.kind());
        }
        ApiError { status, message }
    }
}

/// A body that is not the JSON the endpoint takes: 400 with serde's words.
impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        ApiError::bad_request(rejection.body_text())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(serde_json::json!({ "error": self.message }))).into_response()
    }
}
// ANCHOR_END: error
