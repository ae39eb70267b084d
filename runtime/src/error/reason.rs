//! The server's reason for a failure as one sentence a person reads: its
//! code, name and message. The driver's own `Display` of a write or
//! `bulkWrite` error is the `Debug` form of every refused statement and
//! partial result, and its errors carry `Kind: …, labels: {}, source:
//! None` and the raw reply as hex; none of that is for a reader. The
//! error itself stays whole behind `source()`.

use mongodb::error::{BulkWriteError, ErrorKind, InsertManyError, WriteConcernError, WriteFailure};

/// What the driver said, as one sentence: `server error 121
/// (DocumentValidationFailure): Document failed validation` for what the
/// server refused (the first refused statement of a batch by its index,
/// and how many more), the driver's short words for anything else (an
/// I/O error, no server to select, a failed authentication).
pub(crate) fn reason(e: &mongodb::error::Error) -> String {
    let said = match &*e.kind {
        ErrorKind::Command(c) => server_error(c.code, Some(&c.code_name), "", &c.message),
        ErrorKind::Write(WriteFailure::WriteError(w)) => server_error(w.code, w.code_name.as_deref(), "", &w.message),
        ErrorKind::Write(WriteFailure::WriteConcernError(w)) => concern(std::slice::from_ref(w)),
        ErrorKind::InsertMany(m) => insert_many(m),
        ErrorKind::BulkWrite(b) => return bulk(b, nested(e)),
        kind => tidy(&kind.to_string()),
    };
    match nested(e) {
        Some(inner) => format!("{said}, after {}", reason(inner)),
        None => said,
    }
}

/// The driver error this one wraps (a `bulkWrite` cut after part of it
/// ran keeps the cut here), if any.
fn nested(e: &mongodb::error::Error) -> Option<&mongodb::error::Error> {
    std::error::Error::source(e)?.downcast_ref::<mongodb::error::Error>()
}

/// `server error CODE (Name){at}: message`, the name left out when the
/// server sent none.
fn server_error(code: i32, name: Option<&str>, at: &str, message: &str) -> String {
    let name = match name.map(str::trim) {
        Some(n) if !n.is_empty() => format!(" ({n})"),
        _ => String::new(),
    };
    format!("server error {code}{name}{at}: {}", clause(message))
}

/// The first write-concern error, and how many more.
fn concern(errors: &[WriteConcernError]) -> String {
    let Some(first) = errors.first() else { return String::new() };
    let more = more(errors.len() - 1, "write-concern error");
    format!(
        "write concern not satisfied: {}{more}",
        server_error(first.code, Some(&first.code_name), "", &first.message)
    )
}

fn insert_many(m: &InsertManyError) -> String {
    let writes = m.write_errors.as_deref().unwrap_or_default();
    let first = writes.iter().min_by_key(|w| w.index).map(|w| {
        let at = format!(" at document {} of the batch", w.index);
        format!(
            "{}{}",
            server_error(w.code, w.code_name.as_deref(), &at, &w.message),
            more(writes.len() - 1, "refused document")
        )
    });
    let concern = m.write_concern_error.as_ref().map(|w| concern(std::slice::from_ref(w)));
    joined(first, concern, "the server answered an insert_many with no error")
}

/// The first refused statement of a `bulkWrite` (by its index), how many
/// more, and its write-concern errors; the error that cut it when no
/// statement was refused.
fn bulk(b: &BulkWriteError, cut: Option<&mongodb::error::Error>) -> String {
    let first = b.write_errors.iter().min_by_key(|(i, _)| **i).map(|(i, w)| {
        let said = server_error(w.code, w.code_name.as_deref(), &format!(" at statement {i} of the batch"), &w.message);
        format!("{said}{}", more(b.write_errors.len() - 1, "refused statement"))
    });
    let concern = (!b.write_concern_errors.is_empty()).then(|| concern(&b.write_concern_errors));
    let applied = match b.partial_result {
        Some(_) => " after part of the batch was applied",
        None => "",
    };
    match (joined(first, concern, ""), cut) {
        (said, Some(cut)) if said.is_empty() => format!("the bulkWrite stopped{applied}: {}", reason(cut)),
        (said, Some(cut)) => format!("{said}, then the bulkWrite stopped: {}", reason(cut)),
        (said, None) if said.is_empty() => format!("the bulkWrite failed{applied} without a reason from the server"),
        (said, None) => said,
    }
}

/// Write errors and write-concern errors in one sentence, or `none`.
fn joined(writes: Option<String>, concern: Option<String>, none: &str) -> String {
    match (writes, concern) {
        (Some(w), Some(c)) => format!("{w}; and {c}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => none.to_owned(),
    }
}

/// ` (and N more …s)`, or nothing.
fn more(n: usize, what: &str) -> String {
    match n {
        0 => String::new(),
        1 => format!(" (and 1 more {what})"),
        n => format!(" (and {n} more {what}s)"),
    }
}

/// A message of the server as a clause of docrel's sentence: one line,
/// without its closing period (docrel's message goes on after it).
fn clause(message: &str) -> String {
    let one_line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    one_line.trim_end_matches('.').to_owned()
}

/// The driver's words without its scaffolding: nested errors (a server
/// selection's topology names each server's last error) print as `Kind:
/// …, labels: {}, source: None, server response: None`, and a server's
/// reply as a hex dump (`server response: Some(RawDocumentBuf { data:
/// "74000000016f6b..." })`). Codes, messages and non-empty labels stay.
fn tidy(text: &str) -> String {
    const DUMP: &str = ", server response: Some(RawDocumentBuf { data: ";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(DUMP) {
        out.push_str(&rest[..at]);
        // The dump is a quoted hex string (quotes escaped when nested), then ` })`.
        rest = rest[at + DUMP.len()..].find(" })").map_or("", |end| &rest[at + DUMP.len() + end + 3..]);
    }
    out.push_str(rest);
    for empty in [", labels: {}", ", source: None", ", server response: None"] {
        out = out.replace(empty, "");
    }
    clause(&out.replace("Kind: ", ""))
}

#[cfg(test)]
mod tests {
    use super::{reason, tidy};
    use mongodb::error::{BulkWriteError, CommandError, Error, ErrorKind, WriteError, WriteFailure};
    use serde_json::json;

    fn command(code: i32, name: &str, message: &str) -> Error {
        let c: CommandError = serde_json::from_value(json!({"code": code, "codeName": name, "errmsg": message}))
            .expect("a command error");
        Error::from(ErrorKind::Command(c))
    }

    fn write_error(code: i32, message: &str) -> WriteError {
        serde_json::from_value(json!({"code": code, "errmsg": message})).expect("a write error")
    }

    /// What no reader should meet: the driver's `Debug` forms and its scaffolding.
    fn assert_readable(text: &str) {
        for dump in ["BulkWriteError {", "WriteError {", "Kind:", "labels:", "RawDocumentBuf", "partial_result"] {
            assert!(!text.contains(dump), "`{dump}` in: {text}");
        }
    }

    #[test]
    fn a_command_error_is_its_code_name_and_message() {
        let e = command(112, "WriteConflict", "Write conflict during plan execution.");
        assert_eq!(reason(&e), "server error 112 (WriteConflict): Write conflict during plan execution");
        assert_eq!(reason(&command(2, "", "bad\n  value")), "server error 2: bad value");
    }

    #[test]
    fn a_write_error_is_its_code_and_message() {
        let w = write_error(121, "Document failed validation");
        let e = Error::from(ErrorKind::Write(WriteFailure::WriteError(w)));
        assert!(e.to_string().contains("WriteError {"), "the driver's own words: {e}");
        assert_eq!(reason(&e), "server error 121: Document failed validation");
        let concern =
            serde_json::from_value(json!({"code": 64, "codeName": "WriteConcernFailed", "errmsg": "timed out"}));
        let e = Error::from(ErrorKind::Write(WriteFailure::WriteConcernError(concern.expect("a write-concern error"))));
        assert_eq!(reason(&e), "write concern not satisfied: server error 64 (WriteConcernFailed): timed out");
    }

    #[test]
    fn a_bulk_write_error_is_its_first_refused_statement_and_how_many_more() {
        let mut b = BulkWriteError::default();
        for i in [3, 1, 2] {
            b.write_errors.insert(i, write_error(121, &format!("Document failed validation ({i})")));
        }
        let e = Error::from(ErrorKind::BulkWrite(b.clone()));
        assert!(e.to_string().contains("BulkWriteError {"), "the driver's own words: {e}");
        let text = reason(&e);
        assert_eq!(
            text,
            "server error 121 at statement 1 of the batch: Document failed validation (1) (and 2 more refused \
             statements)"
        );
        assert_readable(&text);
        b.write_errors.retain(|i, _| *i == 2);
        b.write_concern_errors.push(
            serde_json::from_value(json!({"code": 64, "codeName": "WriteConcernFailed", "errmsg": "timed out"}))
                .expect("a write-concern error"),
        );
        let text = reason(&Error::from(ErrorKind::BulkWrite(b)));
        assert_eq!(
            text,
            "server error 121 at statement 2 of the batch: Document failed validation (2); and write concern not \
             satisfied: server error 64 (WriteConcernFailed): timed out"
        );
    }

    #[test]
    fn an_insert_many_error_is_its_first_refused_document() {
        let m = json!({"writeErrors": [
            {"index": 4, "code": 11000, "codeName": "DuplicateKey", "errmsg": "E11000 duplicate key error"},
            {"index": 2, "code": 11000, "codeName": "DuplicateKey", "errmsg": "E11000 duplicate key error"},
        ]});
        let e = Error::from(ErrorKind::InsertMany(serde_json::from_value(m).expect("an insert_many error")));
        assert_eq!(
            reason(&e),
            "server error 11000 (DuplicateKey) at document 2 of the batch: E11000 duplicate key error (and 1 more \
             refused document)"
        );
    }

    #[test]
    fn other_errors_are_the_drivers_short_words() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused (os error 111)");
        let e = Error::from(ErrorKind::Io(std::sync::Arc::new(io)));
        assert_eq!(reason(&e), "I/O error: Connection refused (os error 111)");
        // A server selection's message names each server's last error in
        // the driver's long form, a reply as hex included.
        let selection = "Server selection timeout: No available servers. Topology: { Type: Unknown, Servers: [ { \
                         Address: 127.0.0.1:9, Type: Unknown, Error: Kind: I/O error: Connection refused (os error \
                         111), labels: {}, source: None, server response: Some(RawDocumentBuf { data: \\\"7400\\\" \
                         }) } ] }";
        let text = tidy(selection);
        assert_eq!(
            text,
            "Server selection timeout: No available servers. Topology: { Type: Unknown, Servers: [ { Address: \
             127.0.0.1:9, Type: Unknown, Error: I/O error: Connection refused (os error 111) } ] }"
        );
        assert_readable(&text);
    }
}
