//! Generation for `#[denormalize]`: the copy descriptors the fan-out
//! updaters find through the registry, and the compile-time checks that a
//! copy has its source field's type and that `via` leads to the source.

use super::Checked;
use crate::internals::model::{Copied, ModelCopy};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};

/// The `Copy` descriptors of a document's top-level copies, and their checks.
pub fn document_copies(copies: &[ModelCopy], checked: &mut Checked) -> (Vec<TokenStream>, TokenStream) {
    let mut descriptors = Vec::new();
    let mut checks = Vec::new();
    for ModelCopy { copied, via } in copies {
        let src = source(copied, checked);
        let (src_name, src_field) = (&copied.source.name, &copied.source_field);
        let (stored, via_stored) = (&copied.stored, &via.stored);
        descriptors.push(quote! {
            __docrel::Copy {
                field: #stored,
                source: <#src as __docrel::Document>::COLLECTION,
                source_type: #src_name,
                source_field: <#src>::__DOCREL_FIELDS.#src_field.path(),
                via: #via_stored,
            }
        });
        // rustc reports an unmet bound at the type argument: the `via` key's.
        let via_to = super::respan(checked.doc(&via.to).into_token_stream(), via.ident.span());
        checks.push(quote_spanned! {via.ident.span()=>
            const _: bool = __docrel::leads_to::<#via_to, #src>();
        });
    }
    (descriptors, quote!(#(#checks)*))
}

/// The source document of a copy, once the copy has its source field's
/// type (the one check of a copy, at the source field's name).
fn source(copied: &Copied, checked: &mut Checked) -> syn::Ident {
    let src = checked.doc(&copied.source.path);
    let (field, ty) = (&copied.source_field, copied.ty);
    let key = format!("copy {} {}", copied.ident, src);
    checked.checked(key, || {
        let check =
            quote_spanned!(field.span()=> __docrel::Named::field(<#src>::__DOCREL_FIELDS.#field).copied_as::<#ty>());
        (src.to_token_stream(), check)
    })
}

/// The `ElemCopy` descriptor of an element's copy, and its source document.
pub fn elem_copy(c: &Copied, checked: &mut Checked) -> (TokenStream, syn::Ident) {
    let src = source(c, checked);
    let (stored, src_name, src_field) = (&c.stored, &c.source.name, &c.source_field);
    let copy = quote! {
        __docrel::ElemCopy {
            field: #stored,
            source: <#src as __docrel::Document>::COLLECTION,
            source_type: #src_name,
            source_field: <#src>::__DOCREL_FIELDS.#src_field.path(),
        }
    };
    (copy, src)
}
