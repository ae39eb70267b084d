//! `?` on the driver's and bson's errors inside a function returning
//! [`Result`](super::Result): each becomes the docrel error that says the
//! same.

use super::Error;

/// `?` on the driver's errors in a function returning [`Result`]: the
/// error becomes [`Error::Driver`] (the operation is "a driver call", the
/// collection unknown).
impl From<mongodb::error::Error> for Error {
    fn from(source: mongodb::error::Error) -> Self {
        Error::driver("a driver call", String::new(), source)
    }
}

// bson 2's errors are named `bson2::..`, which exists whichever bson the
// driver has: a driver turned to bson 3 by another crate is then the one
// error of `bson_compat`, not one here too.

/// `?` on bson's encoding errors: [`Error::Bson`].
#[cfg(not(feature = "bson-3"))]
impl From<bson2::ser::Error> for Error {
    fn from(e: bson2::ser::Error) -> Self {
        Error::Bson { message: e.to_string() }
    }
}

/// `?` on bson's decoding errors: [`Error::Bson`].
#[cfg(not(feature = "bson-3"))]
impl From<bson2::de::Error> for Error {
    fn from(e: bson2::de::Error) -> Self {
        Error::Bson { message: e.to_string() }
    }
}

/// `?` on an id that does not parse (`ObjectId::parse_str`): [`Error::Bson`].
#[cfg(not(feature = "bson-3"))]
impl From<bson2::oid::Error> for Error {
    fn from(e: bson2::oid::Error) -> Self {
        Error::Bson { message: e.to_string() }
    }
}

/// `?` on bson's errors (encoding, decoding, ids): [`Error::Bson`].
#[cfg(feature = "bson-3")]
impl From<mongodb::bson::error::Error> for Error {
    fn from(e: mongodb::bson::error::Error) -> Self {
        Error::Bson { message: e.to_string() }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Error;

    /// A full `#[reference(many, max = 10)]` array is named by its bound,
    /// not by an attribute it does not have.
    #[test]
    fn a_full_array_is_named_by_its_bound_not_by_the_embed_attribute() {
        let full = Error::EmbedFull { collection: "posts", id: "1".into(), field: "tags", max: 10, len: 11 };
        let text = full.to_string();
        assert!(!text.contains("#[embed"), "a reference array is no embed: {text}");
        assert!(
            text.contains("max = 10") && text.contains("`posts.tags`") && text.contains("nothing was written"),
            "{text}"
        );
    }
}
