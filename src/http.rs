//! The HTTP client a capability builds at its first request ([`LazyClient`]). Setting up TLS
//! reads the system's certificates and brings 1–1.6 MiB of code and data into memory: a session
//! that never sends a notification or fetches a page should not pay for it at start, and the
//! reading must not hold a runtime worker.

use tokio::sync::OnceCell;

/// A reqwest client built once, at the first [`LazyClient::get`], on a blocking thread. A build
/// error is kept and given to every later call.
#[derive(Debug, Default)]
pub struct LazyClient(OnceCell<Result<reqwest::Client, String>>);

impl LazyClient {
    /// The client; `build` runs on a blocking thread if it is the first call.
    pub async fn get(
        &self,
        build: impl FnOnce() -> Result<reqwest::Client, String> + Send + 'static,
    ) -> Result<&reqwest::Client, &str> {
        let built = self
            .0
            .get_or_init(|| async {
                tokio::task::spawn_blocking(build)
                    .await
                    .unwrap_or_else(|err| Err(format!("the HTTP set-up failed: {err}")))
            })
            .await;
        built.as_ref().map_err(String::as_str)
    }

    /// Whether the client has been built (or its build failed).
    pub fn is_built(&self) -> bool {
        self.0.initialized()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn built_once_at_the_first_call_and_an_error_is_kept() {
        let client = LazyClient::default();
        assert!(!client.is_built());
        assert!(client.get(|| Ok(reqwest::Client::new())).await.is_ok());
        assert!(client.is_built());
        // Built already: a second build is never run.
        assert!(client.get(|| Err("not run".into())).await.is_ok());

        let failing = LazyClient::default();
        assert_eq!(
            failing.get(|| Err("no TLS".into())).await.err(),
            Some("no TLS")
        );
        assert_eq!(
            failing.get(|| Ok(reqwest::Client::new())).await.err(),
            Some("no TLS")
        );
    }
}
