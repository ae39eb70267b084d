//! The values of an index's options that are more than a word: a duration
//! (`expire_after = "30d"`), a partial filter (extended JSON, checked to be
//! a document, or an expression) and a collation.

use super::suggest::did_you_mean;
use proc_macro2::Span;
use syn::parse::ParseStream;
use syn::{Expr, Ident, LitInt, LitStr, Token};

/// `partial = "{..}"` (extended JSON, checked to be an object) or
/// `partial = doc! {..}` (an expression giving a `bson::Document`).
#[derive(Debug, Clone)]
pub enum PartialDecl {
    Json(LitStr),
    Expr(Box<Expr>),
}

/// `collation(locale = "fr", strength = 2, ..)`.
#[derive(Debug, Clone, Default)]
pub struct CollationDecl {
    /// The `collation` word.
    pub span: Option<Span>,
    pub locale: String,
    pub strength: Option<u8>,
    pub case_level: Option<bool>,
    pub case_first: Option<String>,
    pub numeric_ordering: Option<bool>,
    pub alternate: Option<String>,
    pub max_variable: Option<String>,
    pub normalization: Option<bool>,
    pub backwards: Option<bool>,
}

const COLLATION_OPTIONS: &[&str] = &[
    "locale",
    "strength",
    "case_level",
    "case_first",
    "numeric_ordering",
    "alternate",
    "max_variable",
    "normalization",
    "backwards",
];

const DURATION_FORM: &str =
    "`expire_after` is a duration: seconds (`expire_after = 3600`) or a string such as \"30d\" or \"1h30m\" \
     (units s, m, h, d, w)";

/// `= 3600` (seconds) or `= "30d"`, at most `i32::MAX` seconds (MongoDB's limit).
pub fn expire_after(input: ParseStream) -> syn::Result<u64> {
    input.parse::<Token![=]>()?;
    const MAX: u64 = i32::MAX as u64;
    let (seconds, span) = if input.peek(LitInt) {
        let lit: LitInt = input.parse()?;
        (lit.base10_parse::<u64>().map_err(|_| syn::Error::new(lit.span(), DURATION_FORM))?, lit.span())
    } else if input.peek(LitStr) {
        let lit: LitStr = input.parse()?;
        (duration(&lit.value()).ok_or_else(|| syn::Error::new(lit.span(), DURATION_FORM))?, lit.span())
    } else {
        return Err(input.error(DURATION_FORM));
    };
    if seconds > MAX {
        return Err(syn::Error::new(
            span,
            format!("{seconds} seconds is more than a TTL index allows ({MAX} seconds, about 68 years)"),
        ));
    }
    Ok(seconds)
}

/// `"1h30m"` in seconds; `None` when it is not numbers each followed by a unit.
fn duration(text: &str) -> Option<u64> {
    let (mut total, mut number) = (0u64, None::<u64>);
    for c in text.chars() {
        if let Some(d) = c.to_digit(10) {
            number = Some(number.unwrap_or(0).checked_mul(10)?.checked_add(u64::from(d))?);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            'w' => 604_800,
            _ => return None,
        };
        total = total.checked_add(number.take()?.checked_mul(unit)?)?;
    }
    (number.is_none() && !text.is_empty()).then_some(total)
}

/// `= "{..}"` or `= <expression>`.
pub fn partial(input: ParseStream) -> syn::Result<PartialDecl> {
    input.parse::<Token![=]>()?;
    let lit = match input.parse::<Expr>()? {
        Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(lit), .. }) => lit,
        expr => return Ok(PartialDecl::Expr(Box::new(expr))),
    };
    if let Err(problem) = super::json::check_object(&lit.value()) {
        return Err(syn::Error::new(
            lit.span(),
            format!(
                "a partial filter is a document, as extended JSON (`partial = r#\"{{\"active\": true}}\"#`) or \
                 as an expression (`partial = doc! {{\"active\": true}}`): {problem}"
            ),
        ));
    }
    Ok(PartialDecl::Json(lit))
}

/// `(locale = "fr", strength = 2, ..)`; `span` is the `collation` word.
pub fn collation(input: ParseStream, span: Span) -> syn::Result<CollationDecl> {
    let content;
    syn::parenthesized!(content in input);
    drained(&content, |content| collation_options(content, span))
}

fn collation_options(content: ParseStream, span: Span) -> syn::Result<CollationDecl> {
    let mut c = CollationDecl { span: Some(span), ..CollationDecl::default() };
    let mut locale = false;
    while !content.is_empty() {
        let key: Ident = content.parse()?;
        match key.to_string().as_str() {
            "locale" => {
                c.locale = value::<LitStr>(content)?.value();
                locale = true;
            }
            "strength" => {
                let lit: LitInt = value(content)?;
                c.strength = Some(match lit.base10_parse::<u8>() {
                    Ok(s @ 1..=5) => s,
                    _ => return Err(syn::Error::new(lit.span(), "a collation's strength is 1, 2, 3, 4 or 5")),
                });
            }
            "case_level" => c.case_level = Some(flag(content)?),
            "numeric_ordering" => c.numeric_ordering = Some(flag(content)?),
            "normalization" => c.normalization = Some(flag(content)?),
            "backwards" => c.backwards = Some(flag(content)?),
            "case_first" => c.case_first = Some(one_of(content, &["upper", "lower", "off"])?),
            "alternate" => c.alternate = Some(one_of(content, &["non-ignorable", "shifted"])?),
            "max_variable" => c.max_variable = Some(one_of(content, &["punct", "space"])?),
            other => {
                let hint = did_you_mean(other, COLLATION_OPTIONS.iter().copied())
                    .map(|b| format!("did you mean `{b}`? "))
                    .unwrap_or_default();
                return Err(syn::Error::new(
                    key.span(),
                    format!(
                        "unknown collation option `{other}`: {hint}a collation takes {}",
                        COLLATION_OPTIONS.join(", ")
                    ),
                ));
            }
        }
        if !content.is_empty() {
            content.parse::<Token![,]>()?;
        }
    }
    if !locale {
        return Err(syn::Error::new(span, "a collation needs its locale: `collation(locale = \"fr\", ..)`"));
    }
    Ok(c)
}

/// `= value`.
pub fn value<T: syn::parse::Parse>(input: ParseStream) -> syn::Result<T> {
    input.parse::<Token![=]>()?;
    input.parse()
}

/// `parse` on a group's content; on an error, the rest of the content is
/// skipped, so that the error is the one reported (syn would otherwise
/// report the tokens left over instead).
pub fn drained<T>(content: ParseStream, parse: impl FnOnce(ParseStream) -> syn::Result<T>) -> syn::Result<T> {
    let result = parse(content);
    if result.is_err() {
        let _ = content.step(|cursor| {
            let mut rest = *cursor;
            while let Some((_, next)) = rest.token_tree() {
                rest = next;
            }
            Ok(((), rest))
        });
    }
    result
}

/// `case_level` alone is `true`; `case_level = false` says so.
fn flag(input: ParseStream) -> syn::Result<bool> {
    if input.parse::<Option<Token![=]>>()?.is_some() {
        Ok(input.parse::<syn::LitBool>()?.value)
    } else {
        Ok(true)
    }
}

fn one_of(input: ParseStream, allowed: &[&str]) -> syn::Result<String> {
    let lit: LitStr = value(input)?;
    let v = lit.value();
    if allowed.contains(&v.as_str()) {
        return Ok(v);
    }
    let allowed: Vec<String> = allowed.iter().map(|a| format!("\"{a}\"")).collect();
    Err(syn::Error::new(lit.span(), format!("`{v}` is not one of {}", allowed.join(", "))))
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_are_numbers_with_units() {
        assert_eq!(duration("30d"), Some(30 * 86_400));
        assert_eq!(duration("1h30m"), Some(5_400));
        assert_eq!(duration("2w"), Some(1_209_600));
        assert_eq!(duration("0s"), Some(0));
        for bad in ["", "30", "d", "30 days", "1.5h", "99999999999999999999s"] {
            assert_eq!(duration(bad), None, "{bad}");
        }
    }
}
