//! The stored name of a field, as serde will write it: `rename`,
//! `rename(serialize = ..)` and the container's `rename_all` are honoured;
//! `skip`/`skip_serializing` and `flatten` fields have no path of their own.

use syn::{Attribute, LitStr};

/// What serde says of a container.
#[derive(Default)]
pub struct SerdeContainer {
    pub rename_all: Option<String>,
}

/// What serde says of a field.
#[derive(Default)]
pub struct SerdeField {
    pub rename: Option<String>,
    /// `skip`, `skip_serializing` or `flatten`: no stored path of its own.
    pub not_stored: bool,
}

/// Consumes the value of a serde key docrel does not care about.
fn skip_value(meta: &syn::meta::ParseNestedMeta) -> syn::Result<()> {
    if meta.input.peek(syn::Token![=]) {
        let _: syn::Expr = meta.value()?.parse()?;
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        let _: proc_macro2::TokenStream = content.parse()?;
    }
    Ok(())
}

pub fn container(attrs: &[Attribute]) -> syn::Result<SerdeContainer> {
    let mut out = SerdeContainer::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident(super::symbol::SERDE)) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename_all") {
                if meta.input.peek(syn::Token![=]) {
                    out.rename_all = Some(meta.value()?.parse::<LitStr>()?.value());
                } else {
                    meta.parse_nested_meta(|inner| {
                        if inner.path.is_ident("serialize") {
                            out.rename_all = Some(inner.value()?.parse::<LitStr>()?.value());
                        } else {
                            skip_value(&inner)?;
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            } else {
                skip_value(&meta)
            }
        })?;
    }
    Ok(out)
}

pub fn field(attrs: &[Attribute]) -> syn::Result<SerdeField> {
    let mut out = SerdeField::default();
    for attr in attrs.iter().filter(|a| a.path().is_ident(super::symbol::SERDE)) {
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                if meta.input.peek(syn::Token![=]) {
                    out.rename = Some(meta.value()?.parse::<LitStr>()?.value());
                } else {
                    meta.parse_nested_meta(|inner| {
                        if inner.path.is_ident("serialize") {
                            out.rename = Some(inner.value()?.parse::<LitStr>()?.value());
                        } else {
                            skip_value(&inner)?;
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            } else if meta.path.is_ident("skip")
                || meta.path.is_ident("skip_serializing")
                || meta.path.is_ident("flatten")
            {
                out.not_stored = true;
                Ok(())
            } else {
                skip_value(&meta)
            }
        })?;
    }
    Ok(out)
}

/// Applies a serde `rename_all` rule to a Rust field name.
pub fn apply_rename_all(rule: &str, field: &str) -> Option<String> {
    let words: Vec<&str> = field.split('_').filter(|w| !w.is_empty()).collect();
    let cap = |w: &str| {
        let mut c = w.chars();
        c.next().map(|f| f.to_uppercase().collect::<String>() + c.as_str()).unwrap_or_default()
    };
    Some(match rule {
        "lowercase" => field.to_lowercase(),
        "UPPERCASE" => field.to_uppercase(),
        "snake_case" => field.to_owned(),
        "SCREAMING_SNAKE_CASE" => field.to_uppercase(),
        "kebab-case" => field.replace('_', "-"),
        "SCREAMING-KEBAB-CASE" => field.replace('_', "-").to_uppercase(),
        "PascalCase" => words.iter().map(|w| cap(w)).collect(),
        "camelCase" => {
            let pascal: String = words.iter().map(|w| cap(w)).collect();
            let mut c = pascal.chars();
            c.next().map(|f| f.to_lowercase().collect::<String>() + c.as_str()).unwrap_or_default()
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::apply_rename_all;

    #[test]
    fn rename_all_rules() {
        assert_eq!(apply_rename_all("camelCase", "catalog_number").as_deref(), Some("catalogNumber"));
        assert_eq!(apply_rename_all("PascalCase", "due_date").as_deref(), Some("DueDate"));
        assert_eq!(apply_rename_all("kebab-case", "due_date").as_deref(), Some("due-date"));
        assert_eq!(apply_rename_all("SCREAMING_SNAKE_CASE", "due_date").as_deref(), Some("DUE_DATE"));
        assert_eq!(apply_rename_all("nonsense", "x"), None);
    }
}
