//! Generation for `#[derive(View)]`: the projection of a partial view, each
//! field checked at compile time to be a field of the document it views,
//! with the same type and the same stored name.

use super::Checked;
use crate::internals::model::ViewModel;
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};

pub fn expand(m: &ViewModel) -> TokenStream {
    let mut checked = Checked::default();
    let ident = m.ident;
    let of = checked.doc(&m.of);
    let names = m.fields.iter().map(|f| &f.stored);
    let checks = m.fields.iter().map(|f| {
        let (name, ty, stored) = (f.ident, f.ty, &f.stored);
        // A view field is a field of the document, of the same type and the
        // same stored name: the handle says so, or this does not compile;
        // the stored name's verdict is a trait bound, an error in words here.
        quote_spanned! {name.span()=>
            const _: bool = __docrel::view_reads_stored_name::<
                __docrel::Verdict<{ __docrel::Named::field(<#of>::__DOCREL_FIELDS.#name).viewed_as::<#ty>(#stored) }>,
                #ident,
                #of,
            >();
        }
    });
    // The view carries each of its fields, so a loader of a relation on one
    // of them takes the view as parents (and only such loaders do).
    let carries = m.fields.iter().map(|f| {
        let (name, ty) = (f.ident, f.ty);
        let key = super::relations::field_key(name);
        quote! {
            #[automatically_derived]
            impl __docrel::Carries<#of, #key, #ty> for #ident {
                #[inline]
                fn carried(&self) -> &#ty {
                    &self.#name
                }
            }
        }
    });
    let aliases = checked.decls();
    let items = quote! {
        #aliases

        #(#checks)*

        #(#carries)*

        #[automatically_derived]
        impl __docrel::View for #ident {
            type Of = #of;
            const PROJECTION: ::core::option::Option<&'static [&'static str]> =
                __docrel::Some(&[#(#names),*]);
        }
    };
    super::wrap_in_const(m.krate.as_ref(), items)
}
