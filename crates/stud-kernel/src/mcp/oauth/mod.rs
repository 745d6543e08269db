//! OAuth for remote MCP servers (the MCP authorization spec: OAuth 2.1
//! with PKCE, protected-resource and authorization-server discovery,
//! dynamic client registration, resource indicators), on rmcp's `auth`
//! module. `stud mcp login` gets the tokens ([`login`]); a session's
//! connection sends them and refreshes them before they expire
//! ([`authorized`]); `stud mcp logout` forgets them. A server that
//! answers 401 without a kept login is a clear error naming the command
//! to run, never a prompt that would hang a headless run.

pub mod login;
mod net;
pub mod store;

use rmcp::transport::auth::{AuthClient, AuthorizationManager};

pub use login::{LoggedIn, LoginError, LoginUi, login};
pub use net::OAuthNetDenied;
pub use store::TokenStore;

use super::http::McpHttp;

/// `client` wrapped to send the kept login's token (refreshed when due),
/// or `None` when there is no login for this URL.
pub async fn authorized(
    client: McpHttp,
    url: &reqwest::Url,
    store: TokenStore,
) -> Result<Option<AuthClient<McpHttp>>, String> {
    if !store.exists() {
        return Ok(None);
    }
    let http = net::OAuthHttp::new(url).map_err(|e| e.to_string())?;
    let mut manager =
        AuthorizationManager::new_with_oauth_http_client(url.as_str(), std::sync::Arc::new(http))
            .await
            .map_err(|e| e.to_string())?;
    manager.set_credential_store(store);
    // Discovery again: a refresh needs the token endpoint, and a server
    // whose authorization server changed drops the old tokens.
    let kept = manager
        .initialize_from_store()
        .await
        .map_err(|e| format!("cannot use the kept login: {e}"))?;
    Ok(kept.then(|| AuthClient::new(client, manager)))
}
