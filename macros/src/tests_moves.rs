//! The expansion of a move (`#[document(moved_from = ..)]`), pinned as a
//! snapshot beside the patterns' (`tests.rs`).

use proc_macro2::TokenStream;
use syn::parse_quote;

fn pretty(tokens: TokenStream) -> String {
    let file: syn::File = syn::parse2(tokens).expect("the expansion is a list of items");
    prettyplease::unparse(&file)
}

#[test]
fn moved_from_an_embedded_array() {
    let expansion = pretty(crate::derive_document_inner(&parse_quote! {
        #[document(collection = "comments", moved_from = Post::comments)]
        pub struct Comment {
            #[serde(rename = "_id")]
            id: ObjectId,
            #[parent_ref(to = Post, on_delete = cascade)]
            post: ObjectId,
            text: String,
        }
    }));
    insta::with_settings!({ omit_expression => true }, { insta::assert_snapshot!(expansion) });
}
