//! Errors as HTTP answers: each of docrel's errors a client can cause gets
//! its status code and docrel's own message (what went wrong, what was
//! written, how to fix it); anything else is a 500 whose details go to the
//! log, not to the client.

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
}

impl From<docrel::Error> for ApiError {
    fn from(e: docrel::Error) -> Self {
        use docrel::Error as E;
        let status = match &e {
            // A unique index (`#[document(unique)]`, or the `_id`) already has this value.
            _ if e.is_duplicate_key() => StatusCode::CONFLICT,
            E::NotFound { .. } => StatusCode::NOT_FOUND,
            // `on_delete = restrict`: other documents still refer to this one.
            E::StillReferenced { .. } => StatusCode::CONFLICT,
            // A bound (`max = 50`) or the 16 MiB limit: nothing was written.
            E::EmbedFull { .. } | E::DocumentTooLarge { .. } => StatusCode::BAD_REQUEST,
            // The server is away or stepping down: the client may retry.
            _ if e.is_transient() => StatusCode::SERVICE_UNAVAILABLE,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        if status == StatusCode::INTERNAL_SERVER_ERROR {
            // Collections, ids and the server's words are for the log.
            eprintln!("catalog-service: {} error: {e}", e.kind());
            return ApiError { status, message: "internal error".into() };
        }
        ApiError { status, message: e.to_string() }
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
