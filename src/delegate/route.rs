//! Route pinning: a delegate runs on exactly the model it names (or the session's current one),
//! which Pi must list with a window large enough; never a substitute.

use super::artifacts::{Route, RouteOrigin};
use super::errors::{DelegateError, DelegateErrorCode};
use crate::bridge::ModelInfo;

/// Pins the route: an explicit one must be listed exactly; an omitted one is the session's
/// current model, which must be listed too (its window is needed). No fallback, ever.
pub(crate) fn resolve_route(
    requested: Option<&(String, String)>,
    current: Option<&(String, String)>,
    models: &[ModelInfo],
) -> Result<Route, DelegateError> {
    let (wanted, origin) = match (requested, current) {
        (Some(route), _) => (route, RouteOrigin::Explicit),
        (None, Some(route)) => (route, RouteOrigin::ParentCurrent),
        (None, None) => {
            return Err(DelegateError::new(
                DelegateErrorCode::RouteUnresolved,
                "bg_delegate has no route: the session has no current model and none was given",
            ));
        }
    };
    let Some(model) = models
        .iter()
        .find(|model| model.provider == wanted.0 && model.id == wanted.1)
    else {
        let mut listed: Vec<String> = models
            .iter()
            .map(|m| format!("{}/{}", m.provider, m.id))
            .collect();
        listed.sort();
        listed.truncate(20);
        return Err(DelegateError::new(
            DelegateErrorCode::RouteUnresolved,
            format!(
                "route {}/{} is not in the current model registry (available: {}); it is never \
                 substituted",
                wanted.0,
                wanted.1,
                if listed.is_empty() {
                    "none".to_string()
                } else {
                    listed.join(", ")
                }
            ),
        ));
    };
    let route = Route {
        provider: model.provider.clone(),
        model: model.id.clone(),
        context_window_tokens: model.context_window.unwrap_or(0),
        origin,
    };
    if route.allowed_input_tokens().is_none() {
        return Err(DelegateError::new(
            DelegateErrorCode::RouteCapacityUnknown,
            format!(
                "route {} declares a context window of {} tokens; a delegate needs at least 36864",
                route.qualified(),
                route.context_window_tokens
            ),
        ));
    }
    Ok(route)
}
