//! A stand-in ntfy server on loopback that records every request (path, headers, JSON body) and
//! answers 200, so a test can read the notifications the workbench sent.

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::http::{HeaderMap, Uri};
use serde_json::Value;

/// A request the stand-in ntfy server received: path, headers, JSON body.
pub type Received = (String, HeaderMap, Value);

/// An ntfy stand-in on loopback that records every request and answers 200.
pub struct NtfyServer {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
    _runtime: tokio::runtime::Runtime,
}

impl NtfyServer {
    pub fn start() -> NtfyServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&received);
        let app = axum::Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
            let record = Arc::clone(&record);
            async move {
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                record
                    .lock()
                    .unwrap()
                    .push((uri.path().to_owned(), headers, body));
                "{}"
            }
        });
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move { axum::serve(listener, app).await });
        NtfyServer {
            url,
            received,
            _runtime: runtime,
        }
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }
}
