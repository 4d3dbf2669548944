//! `GET /openapi.json`: the OpenAPI 3.1 document of the API, generated from the
//! handlers' `#[utoipa::path]` attributes as the router is built from them (every
//! route goes through `utoipa_axum::routes!`, so the document lists every route).

use std::sync::Arc;

use axum::Json;
use axum::extract::Extension;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};

/// The document's fixed parts; the paths come from the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Oxydra coordinator API",
        description = "Agent blueprints, validated runs, approvals that wait for a person \
                       (docs/coordinator.md). Every failure is `{error, message, …}` JSON.",
    ),
    tags(
        (name = "agents", description = "Blueprints"),
        (name = "runs", description = "Runs and their events"),
        (name = "approvals", description = "Tool calls waiting for a person"),
        (name = "meta", description = "This document"),
        (name = "console", description = "The web console (served when it is on)"),
    ),
    modifiers(&BearerAuth)
)]
pub(crate) struct ApiDoc;

/// Adds the bearer token scheme (`Authorization: Bearer <token>`, when `serve` has a
/// token).
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The generated document, put into request extensions by the router.
#[derive(Clone)]
pub(crate) struct Document(pub(crate) Arc<serde_json::Value>);

/// `GET /openapi.json`.
#[utoipa::path(get, path = "/openapi.json", tag = "meta", responses(
    (status = 200, description = "This OpenAPI document", body = serde_json::Value),
))]
pub(crate) async fn openapi_json(
    Extension(document): Extension<Document>,
) -> Json<serde_json::Value> {
    Json((*document.0).clone())
}
