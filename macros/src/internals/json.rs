//! Whether a string is one JSON object: a partial filter written as
//! extended JSON is checked when the program is compiled, so that a typo
//! is an error at the attribute rather than at `ensure_indexes`. The
//! runtime parses it (as extended JSON) with serde_json and bson.

/// `Ok` when `text` is exactly one JSON object; else what is wrong, and where.
pub fn check_object(text: &str) -> Result<(), String> {
    let mut p = Json { bytes: text.as_bytes(), at: 0 };
    p.space();
    if p.peek() != Some(b'{') {
        return Err(match p.peek() {
            None => "it is empty".to_owned(),
            Some(_) => "it is not a JSON object (`{..}`)".to_owned(),
        });
    }
    p.value()?;
    p.space();
    match p.peek() {
        None => Ok(()),
        Some(_) => Err(p.problem("text after the object")),
    }
}

struct Json<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Json<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn problem(&self, what: &str) -> String {
        format!("{what} at character {}", self.at + 1)
    }

    fn space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        self.space();
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(self.problem(&format!("expected `{}`", b as char)))
        }
    }

    fn value(&mut self) -> Result<(), String> {
        self.space();
        match self.peek() {
            Some(b'{') => self.sequence(b'}', |p| {
                p.space();
                p.string()?;
                p.expect(b':')?;
                p.value()
            }),
            Some(b'[') => self.sequence(b']', Json::value),
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') => {
                let start = self.at;
                while self.peek().is_some_and(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')) {
                    self.at += 1;
                }
                let number = std::str::from_utf8(&self.bytes[start..self.at]).unwrap_or("");
                number.parse::<f64>().map(|_| ()).map_err(|_| self.problem("a malformed number"))
            }
            _ => {
                for word in ["true", "false", "null"] {
                    if self.bytes[self.at..].starts_with(word.as_bytes()) {
                        self.at += word.len();
                        return Ok(());
                    }
                }
                Err(self.problem("expected a value (a string in double quotes, a number, an object, ..)"))
            }
        }
    }

    /// `{..}` or `[..]`: items separated by commas, `close` at the end.
    fn sequence(&mut self, close: u8, mut item: impl FnMut(&mut Self) -> Result<(), String>) -> Result<(), String> {
        self.at += 1;
        self.space();
        if self.peek() == Some(close) {
            self.at += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            self.space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b) if b == close => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(self.problem(&format!("expected `,` or `{}`", close as char))),
            }
        }
    }

    fn string(&mut self) -> Result<(), String> {
        if self.peek() != Some(b'"') {
            return Err(self.problem("expected a key in double quotes"));
        }
        self.at += 1;
        while let Some(b) = self.peek() {
            self.at += 1;
            match b {
                b'"' => return Ok(()),
                b'\\' => self.at += 1,
                _ => {}
            }
        }
        Err(self.problem("an unterminated string"))
    }
}

#[cfg(test)]
mod tests {
    use super::check_object;

    #[test]
    fn only_one_object_passes() {
        for ok in [r#"{"active": true}"#, r#" {"qty": {"$gt": 5}, "tags": ["a", "b\"c"], "n": -1.5e3} "#, "{}"] {
            assert_eq!(check_object(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_object("[1]").unwrap_err(), "it is not a JSON object (`{..}`)");
        assert_eq!(check_object("").unwrap_err(), "it is empty");
        assert_eq!(check_object("{active: true}").unwrap_err(), "expected a key in double quotes at character 2");
        assert_eq!(check_object(r#"{"a": 1} x"#).unwrap_err(), "text after the object at character 10");
        assert_eq!(check_object(r#"{"a": 1"#).unwrap_err(), "expected `,` or `}` at character 8");
    }
}
