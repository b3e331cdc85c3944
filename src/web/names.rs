//! The web capability's fixed names, a leaf both the fetch and the search import.

/// The settings file's path below the home or workspace directory.
pub const WEB_CONFIG_FILE: &str = ".unipi/config/web.json";

/// The original Unipi's settings (`smartFetch`, `cache`, `providers`), read under `web.json`.
pub const UNIPI_CONFIG_FILE: &str = ".unipi/config/web-api/config.json";

/// The original Unipi's provider keys (`{providerId: "apiKey"}`), read under `web.json`.
pub const UNIPI_AUTH_FILE: &str = ".unipi/config/web-api/auth.json";

/// What a desktop Chrome on Windows says (the original's default profile): the fetch's
/// `User-Agent` unless `userAgent` replaces it, and the search's (DuckDuckGo's HTML endpoint
/// wants a browser's).
pub(crate) const BROWSER_USER_AGENT: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) \
     AppleWebKit/537.36 (KHTML, like Gecko) Chrome/145.0.0.0 Safari/537.36";
