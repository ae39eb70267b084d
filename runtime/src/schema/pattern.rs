//! The patterns of the reference texts as values. Every relationship has
//! exactly one, decided here from its descriptor and nowhere else: the
//! schema report, the doctor, the admin checks and the stored schema ask
//! [`Relation::pattern`] (or [`StoredRelation::pattern`]) instead of
//! matching on [`RelationKind`] and its options themselves, so that a new
//! pattern is one new variant the compiler then points at everywhere it
//! matters (`docs/layout.md`, "Adding a pattern").

use serde::Serialize;

use crate::schema::document::{Relation, RelationKind};
use crate::schema::stored::{StoredKind, StoredRelation};

/// The pattern a relationship follows, after the reference texts.
///
/// ```
/// use docrel::{Document, bson::oid::ObjectId, schema::Pattern};
/// # use serde::{Deserialize, Serialize};
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "hosts")]
/// struct Host { #[serde(rename = "_id")] id: ObjectId }
///
/// #[derive(Document, Serialize, Deserialize)]
/// #[document(collection = "logmsg")]
/// struct LogMsg {
///     #[serde(rename = "_id")] id: ObjectId,
///     #[parent_ref(to = Host)] host: ObjectId,
/// }
///
/// let host = &LogMsg::schema().relations[0];
/// assert_eq!(host.pattern(), Pattern::ParentReference);
/// assert_eq!(host.pattern().name(), "one-to-squillions (parent reference)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Pattern {
    /// One embedded struct (`#[embed]` on a struct): one-to-one.
    EmbedOne,
    /// An embedded array (`#[embed]` on a `Vec`): one-to-few.
    Embed,
    /// An embedded array whose elements hold references
    /// (`comments[].author`), possibly with copies of the referred fields.
    ElementReferences,
    /// An embedded array of summaries of the newest (or highest) N
    /// documents of a child collection (`#[embed(subset_of = ..)]`).
    Subset,
    /// An array of child references with no inverse (`#[reference(many)]`):
    /// one-to-many, or the one-way side of N:M.
    ChildReferences,
    /// A single reference with no inverse (`#[reference]`): many-to-one.
    Reference,
    /// A reference from child to parent (`#[parent_ref]`): one-to-squillions.
    ParentReference,
    /// One side of a two-way reference (`inverse = ..`): `many` on the side
    /// that holds an array of ids. Both sides `many` is two-way N:M.
    TwoWay {
        /// This side holds an array of ids.
        many: bool,
    },
    /// The array of a bucket document paged by count (`#[bucket(size)]`).
    BucketByCount,
    /// The array of a bucket document per time window (`#[bucket(window)]`).
    BucketByTime,
    /// Counts (and sums) per parent and window, no array
    /// (`#[bucket(counter, window = ..)]`).
    Counter,
}

impl Pattern {
    /// The pattern of a relationship of `kind` with these options: the one
    /// classification of the crate.
    fn classify(kind: RelationKind, two_way: bool, subset: bool, elements: bool, bucket: Option<Bucketed>) -> Pattern {
        match kind {
            RelationKind::Embed { many: true, .. } if subset => Pattern::Subset,
            RelationKind::Embed { many: true, .. } if elements => Pattern::ElementReferences,
            RelationKind::Embed { many: true, .. } => Pattern::Embed,
            RelationKind::Embed { many: false, .. } => Pattern::EmbedOne,
            RelationKind::RefMany { .. } if two_way => Pattern::TwoWay { many: true },
            RelationKind::RefMany { .. } => Pattern::ChildReferences,
            // `inverse` is refused on a parent reference.
            RelationKind::RefOne { .. } if two_way => Pattern::TwoWay { many: false },
            RelationKind::RefOne { .. } => Pattern::Reference,
            RelationKind::ParentRef => Pattern::ParentReference,
            RelationKind::Bucket => match bucket {
                Some(Bucketed::Counter) => Pattern::Counter,
                Some(Bucketed::ByTime) => Pattern::BucketByTime,
                Some(Bucketed::ByCount) | None => Pattern::BucketByCount,
            },
        }
    }

    /// The pattern's name in the reference texts, as the schema report and
    /// the doctor print it. A two-way side is named by the shape of its own
    /// side (the report's details say "two-way with .."), references inside
    /// elements by their array's.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::EmbedOne => "one-to-one (embed)",
            Pattern::Embed | Pattern::ElementReferences => "one-to-few (embed)",
            Pattern::Subset => "subset",
            Pattern::ChildReferences | Pattern::TwoWay { many: true } => "one-to-many (child references)",
            Pattern::Reference | Pattern::TwoWay { many: false } => "many-to-one (reference)",
            Pattern::ParentReference => "one-to-squillions (parent reference)",
            Pattern::BucketByCount | Pattern::BucketByTime => "bucket",
            Pattern::Counter => "bucket (counter)",
        }
    }

    /// One word for the kind of array, as the doctor's tables print it:
    /// `embed`, `subset`, `references` or `bucket` (`-` for what holds no
    /// array).
    pub fn array_word(self) -> &'static str {
        match self {
            Pattern::Embed | Pattern::ElementReferences => "embed",
            Pattern::Subset => "subset",
            Pattern::ChildReferences | Pattern::TwoWay { many: true } => "references",
            Pattern::BucketByCount | Pattern::BucketByTime => "bucket",
            Pattern::EmbedOne
            | Pattern::Reference
            | Pattern::TwoWay { many: false }
            | Pattern::ParentReference
            | Pattern::Counter => "-",
        }
    }

    /// Whether the pattern keeps an array that grows with the data (rule
    /// 3 measures it, the doctor reads its lengths): embeds, references,
    /// subsets and bucket pages; not a counter, which holds no array.
    pub fn is_array(self) -> bool {
        matches!(
            self,
            Pattern::Embed
                | Pattern::ElementReferences
                | Pattern::Subset
                | Pattern::ChildReferences
                | Pattern::TwoWay { many: true }
                | Pattern::BucketByCount
                | Pattern::BucketByTime
        )
    }

    /// Whether the array holds references (ids, or `{id, ..}` structs).
    pub fn holds_references(self) -> bool {
        matches!(self, Pattern::ChildReferences | Pattern::TwoWay { many: true })
    }

    /// Whether the array is a bucket's page (by count or by time).
    pub fn is_bucket(self) -> bool {
        matches!(self, Pattern::BucketByCount | Pattern::BucketByTime)
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// How a bucket array is filled, as far as its pattern goes.
#[derive(Clone, Copy)]
enum Bucketed {
    ByCount,
    ByTime,
    Counter,
}

impl Bucketed {
    fn of(counter: bool, window: bool) -> Bucketed {
        match (counter, window) {
            (true, _) => Bucketed::Counter,
            (false, true) => Bucketed::ByTime,
            (false, false) => Bucketed::ByCount,
        }
    }
}

impl Relation {
    /// The pattern this relationship follows.
    pub fn pattern(&self) -> Pattern {
        let bucket = self.bucket.as_ref().map(|b| Bucketed::of(b.counter, b.window_ms.is_some()));
        Pattern::classify(self.kind, self.inverse.is_some(), self.subset.is_some(), !self.elements.is_empty(), bucket)
    }
}

impl StoredRelation {
    /// The pattern this stored relationship follows (as
    /// [`Relation::pattern`] of the program that published it).
    pub fn pattern(&self) -> Pattern {
        let bucket = self.bucket.as_ref().map(|b| Bucketed::of(b.counter, b.window_ms.is_some()));
        // The key of `{id, ..}` elements plays no part in the pattern (and a
        // descriptor's names are leaked: none is made here).
        let kind = match self.kind {
            StoredKind::Embed { many, max } => RelationKind::Embed { many, max },
            StoredKind::RefMany { max, .. } => RelationKind::RefMany { max, key: None },
            StoredKind::RefOne { optional } => RelationKind::RefOne { optional },
            StoredKind::ParentRef => RelationKind::ParentRef,
            StoredKind::Bucket => RelationKind::Bucket,
        };
        Pattern::classify(kind, self.inverse.is_some(), self.subset.is_some(), !self.elements.is_empty(), bucket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::document::{BucketSpec, SubsetSpec};
    use crate::schema::entries::{embed_relation, ref_relation};

    const SUBSET: SubsetSpec = SubsetSpec {
        child: "c",
        child_type: "C",
        sort: &[],
        keep_last: false,
        key: None,
        fields: None,
        max_bytes: None,
    };
    const fn bucket(window_ms: Option<i64>, counter: bool) -> BucketSpec {
        BucketSpec {
            parent: "p",
            count: "count",
            page: "page",
            start: "start",
            size: None,
            window_ms,
            max_bytes: None,
            counter,
            sum: None,
        }
    }

    #[test]
    fn every_shape_has_one_pattern() {
        let many = RelationKind::RefMany { max: None, key: None };
        let one = RelationKind::RefOne { optional: false };
        let embed = embed_relation("a", "a", true, None, &[], None);
        assert_eq!(embed.pattern(), Pattern::Embed);
        assert_eq!(embed_relation("a", "a", false, None, &[], None).pattern(), Pattern::EmbedOne);
        assert_eq!(
            Relation { subset: Some(SUBSET), ..embed_relation("a", "a", true, None, &[], None) }.pattern(),
            Pattern::Subset
        );
        assert_eq!(ref_relation("a", "a", many, "t", "T", None).pattern(), Pattern::ChildReferences);
        assert_eq!(ref_relation("a", "a", one, "t", "T", None).pattern(), Pattern::Reference);
        assert_eq!(ref_relation("a", "a", RelationKind::ParentRef, "t", "T", None).pattern(), Pattern::ParentReference);
        let two_way = |kind| Relation { inverse: Some("b"), ..ref_relation("a", "a", kind, "t", "T", None) };
        assert_eq!(two_way(many).pattern(), Pattern::TwoWay { many: true });
        assert_eq!(two_way(one).pattern(), Pattern::TwoWay { many: false });
        let bucketed = |b| Relation {
            kind: RelationKind::Bucket,
            bucket: Some(b),
            ..embed_relation("a", "a", true, None, &[], None)
        };
        assert_eq!(bucketed(bucket(None, false)).pattern(), Pattern::BucketByCount);
        assert_eq!(bucketed(bucket(Some(1000), false)).pattern(), Pattern::BucketByTime);
        assert_eq!(bucketed(bucket(Some(1000), true)).pattern(), Pattern::Counter);
    }

    #[test]
    fn a_stored_relation_has_the_pattern_of_its_program() {
        let many = RelationKind::RefMany { max: Some(5), key: None };
        let two_way = Relation { inverse: Some("b"), ..ref_relation("a", "a", many, "t", "T", None) };
        assert_eq!(StoredRelation::from(&two_way).pattern(), two_way.pattern());
        let embed = embed_relation("a", "a", true, None, &[], None);
        assert_eq!(StoredRelation::from(&embed).pattern(), Pattern::Embed);
    }

    #[test]
    fn arrays_are_what_rule_3_measures() {
        assert!(Pattern::Subset.is_array() && Pattern::BucketByTime.is_array());
        assert!(!Pattern::Counter.is_array() && !Pattern::Reference.is_array() && !Pattern::EmbedOne.is_array());
        assert!(Pattern::TwoWay { many: true }.holds_references() && !Pattern::Embed.holds_references());
    }
}
