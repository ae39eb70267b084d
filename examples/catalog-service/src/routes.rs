//! The endpoints. Each handler parses its input, makes one or two docrel
//! calls and shapes the answer; docrel keeps the copies, the bound and the
//! delete rule, and its errors become status codes through [`ApiError`].
//!
//! | endpoint | does | round trips |
//! |---|---|---|
//! | `POST /parts` | creates a part (409 when its `partno` is taken) | 2 |
//! | `PATCH /parts/{id}` | renames a part; every product's copy of the name follows | 3 |
//! | `DELETE /parts/{id}` | deletes a part no product uses (409 otherwise) | 2 (1 when refused) |
//! | `POST /products` | creates a product; the parts' names are copied in | 6 |
//! | `GET /products/{id}` | the product, its parts' prices loaded | 2: the product, one `$in` for its parts |
//! | `GET /products?limit=&after=` | a page of products in `_id` order, prices loaded | 2, whatever the page's size |
//! | `DELETE /products/{id}` | deletes a product | 1 |
//!
//! The tests (`tests/endpoints.rs`) assert each count.

use crate::error::ApiError;
use crate::schema::{Part, PartPrice, PartRef, Product};
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, patch, post};
use axum::{Json, Router};
use docrel::bson::oid::ObjectId;
use docrel::mongodb::Database;
use docrel::Filter;
use serde::{Deserialize, Serialize};

// ANCHOR: state
/// What every handler shares: the database handle. It holds the client's
/// connection pool, so cloning it per request is cheap and every request
/// uses the one pool made at startup.
#[derive(Clone)]
pub struct AppState {
    pub db: Database,
}

/// The service's routes on `state`.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/parts", post(create_part))
        .route("/parts/{id}", patch(rename_part).delete(delete_part))
        .route("/products", post(create_product).get(list_products))
        .route("/products/{id}", get(get_product).delete(delete_product))
        .with_state(state)
}
// ANCHOR_END: state

/// The body of `POST /parts`.
#[derive(Deserialize)]
pub struct NewPart {
    pub partno: String,
    pub name: String,
    pub price: f64,
}

/// A part as the API shows it (ids as 24 hex digits).
#[derive(Serialize)]
pub struct PartOut {
    pub id: String,
    pub partno: String,
    pub name: String,
    pub price: f64,
}

/// The body of `POST /products`: a name and the ids of its parts.
#[derive(Deserialize)]
pub struct NewProduct {
    pub name: String,
    pub parts: Vec<String>,
}

/// The body of `PATCH /parts/{id}`.
#[derive(Deserialize)]
pub struct Rename {
    pub name: String,
}

/// A product with its parts: names from the copies, prices loaded.
#[derive(Serialize)]
pub struct ProductOut {
    pub id: String,
    pub name: String,
    pub parts: Vec<LineOut>,
}

/// One part of a product; `partno` and `price` are absent for a part that
/// no longer exists.
#[derive(Serialize)]
pub struct LineOut {
    pub id: String,
    pub name: String,
    pub partno: Option<String>,
    pub price: Option<f64>,
}

/// The query of `GET /products`.
#[derive(Deserialize)]
pub struct PageQuery {
    pub limit: Option<u32>,
    pub after: Option<String>,
}

/// A page of products, and the `after` of the next page (none at the end).
#[derive(Serialize)]
pub struct Page {
    pub items: Vec<ProductOut>,
    pub next: Option<String>,
}

/// The largest page `GET /products` answers.
pub const MAX_PAGE: u32 = 100;

/// An id from a path or a body: 400 unless it is 24 hex digits.
pub fn parse_id(what: &str, text: &str) -> Result<ObjectId, ApiError> {
    ObjectId::parse_str(text).map_err(|_| ApiError::bad_request(format!("`{text}` is not a {what} id (24 hex digits)")))
}

/// 400 unless `text` has more than blanks.
pub fn not_blank(what: &str, text: &str) -> Result<(), ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::bad_request(format!("{what} must not be empty")));
    }
    Ok(())
}

/// `POST /parts`: 201 with the part; 409 when its `partno` is taken.
pub async fn create_part(
    State(state): State<AppState>,
    body: Result<Json<NewPart>, JsonRejection>,
) -> Result<(StatusCode, Json<PartOut>), ApiError> {
    let Json(new) = body?;
    not_blank("name", &new.name)?;
    not_blank("partno", &new.partno)?;
    let part = Part { id: ObjectId::new(), partno: new.partno, name: new.name, price: new.price };
    // The one unique value a new part has: the client reads which it is.
    let taken = |e: docrel::Error| match e.is_duplicate_key() {
        true => ApiError::conflict(format!("partno `{}` is already taken", part.partno)),
        false => e.into(),
    };
    Part::repo(&state.db).insert(&part).await.map_err(taken)?;
    let Part { id, partno, name, price } = part;
    Ok((StatusCode::CREATED, Json(PartOut { id: id.to_hex(), partno, name, price })))
}

// ANCHOR: rename
/// `PATCH /parts/{id}`: renames the part; every product's copy of the name follows.
pub async fn rename_part(
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Result<Json<Rename>, JsonRejection>,
) -> Result<Json<PartOut>, ApiError> {
    let id = parse_id("part", &id)?;
    let Json(rename) = body?;
    not_blank("name", &rename.name)?;
    // One call: the part is renamed and every product's copy of its name
    // follows (one updateMany). A missing part is NotFound: 404.
    let parts = Part::repo(&state.db);
    parts.update_by_id(&id, Part::fields().name.set(rename.name)).await?;
    let Part { id, partno, name, price } = parts.require(&id).await?;
    Ok(Json(PartOut { id: id.to_hex(), partno, name, price }))
}
// ANCHOR_END: rename

/// `DELETE /parts/{id}`: 204; 409 while a product uses the part, 404 when there is none.
pub async fn delete_part(State(state): State<AppState>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    let id = parse_id("part", &id)?;
    // `on_delete = restrict`: a part some product uses is StillReferenced, 409.
    match Part::repo(&state.db).delete_by_id(&id).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::not_found(format!("no part has id {id}"))),
    }
}

/// `POST /products`: 201 with the product, its parts' names copied in.
pub async fn create_product(
    State(state): State<AppState>,
    body: Result<Json<NewProduct>, JsonRejection>,
) -> Result<(StatusCode, Json<ProductOut>), ApiError> {
    let Json(new) = body?;
    not_blank("name", &new.name)?;
    let ids = new.parts.iter().map(|p| parse_id("part", p)).collect::<Result<Vec<_>, _>>()?;
    let known = Part::repo(&state.db).count(Part::fields().id.is_in(&ids)).await?;
    let distinct = ids.iter().collect::<std::collections::HashSet<_>>().len() as u64;
    if known != distinct {
        return Err(ApiError::bad_request("a part of the product does not exist"));
    }
    // The names are left empty: the insert copies them from the parts. More
    // than `max = 50` parts is EmbedFull, 400 with docrel's message.
    let parts = ids.into_iter().map(|id| PartRef { id, name: String::new() }).collect();
    let product = Product { id: ObjectId::new(), name: new.name, parts };
    Product::repo(&state.db).insert(&product).await?;
    let stored = Product::repo(&state.db).require(&product.id).await?;
    Ok((StatusCode::CREATED, Json(with_prices(&state.db, &[stored]).await?.remove(0))))
}

// ANCHOR: get_product
/// `GET /products/{id}`: the product with its parts' prices, in 2 round trips.
pub async fn get_product(State(state): State<AppState>, Path(id): Path<String>) -> Result<Json<ProductOut>, ApiError> {
    let id = parse_id("product", &id)?;
    let product = Product::repo(&state.db).require(&id).await?; // NotFound: 404
    Ok(Json(with_prices(&state.db, &[product]).await?.remove(0)))
}

/// The products with their parts' prices: one query for all of them.
pub async fn with_prices(db: &Database, products: &[Product]) -> Result<Vec<ProductOut>, ApiError> {
    let prices = Product::rels().parts.load::<PartPrice>(db, products).await?;
    Ok(products.iter().enumerate().map(|(i, p)| product_out(p, prices.of(i))).collect())
}
// ANCHOR_END: get_product

/// The API's view of a product: each part's copied name, and its `partno`
/// and price from `prices` (the loaded parts of this product).
pub fn product_out<'a>(product: &Product, prices: impl Iterator<Item = &'a PartPrice>) -> ProductOut {
    let prices: Vec<&PartPrice> = prices.collect();
    let parts = product
        .parts
        .iter()
        .map(|line| {
            let loaded = prices.iter().find(|p| p.id == line.id);
            LineOut {
                id: line.id.to_hex(),
                name: line.name.clone(),
                partno: loaded.map(|p| p.partno.clone()),
                price: loaded.map(|p| p.price),
            }
        })
        .collect();
    ProductOut { id: product.id.to_hex(), name: product.name.clone(), parts }
}

// ANCHOR: list_products
/// `GET /products?limit=&after=`: a page of products in `_id` order, in 2 round trips.
pub async fn list_products(
    State(state): State<AppState>,
    Query(page): Query<PageQuery>,
) -> Result<Json<Page>, ApiError> {
    let limit = page.limit.unwrap_or(20).clamp(1, MAX_PAGE);
    // Keyset paging: after the last `_id` of the page before, through the
    // `_id` index, so a page costs the same wherever it is.
    let filter = match &page.after {
        Some(after) => Product::fields().id.gt(parse_id("product", after)?),
        None => Filter::all(),
    };
    let products =
        Product::repo(&state.db).find(filter).sort(Product::fields().id.asc()).limit(u64::from(limit)).to_vec().await?;
    let next = (products.len() == limit as usize).then(|| products[products.len() - 1].id.to_hex());
    Ok(Json(Page { items: with_prices(&state.db, &products).await?, next }))
}
// ANCHOR_END: list_products

/// `DELETE /products/{id}`: 204, or 404 when there is none.
pub async fn delete_product(State(state): State<AppState>, Path(id): Path<String>) -> Result<StatusCode, ApiError> {
    let id = parse_id("product", &id)?;
    match Product::repo(&state.db).delete_by_id(&id).await? {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::not_found(format!("no product has id {id}"))),
    }
}
