//! Lists the tools of a protected MCP server, logging in with OAuth when it asks.
//!
//! ```text
//! cargo run -p everymcp-client --example oauth_login -- https://mcp.example.com/mcp [tokens.json]
//! ```
//!
//! The authorization URL is printed; open it in a browser, authorize, and paste back the
//! address the browser was sent to (it need not load). Tokens are kept in the file (mode 0600)
//! and refreshed before they expire, so the next run logs in only if they are gone.

use mcp_client::Client;
use mcp_client::oauth::{FileTokenStore, OAuthConfig, OAuthError, RedirectHandler};
use mcp_client::transport::BoxFuture;

/// Prints the authorization URL and reads back where the browser ended.
#[derive(Debug)]
struct Paste;

impl RedirectHandler for Paste {
    fn authorize<'a>(
        &'a self,
        authorization_url: &'a str,
        _redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<String, OAuthError>> {
        Box::pin(async move {
            println!("Open this address and authorize:\n  {authorization_url}");
            println!("Then paste the address the browser was sent to:");
            let line = tokio::task::spawn_blocking(|| {
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).map(|_| line)
            })
            .await
            .map_err(|e| OAuthError::Redirect(e.to_string()))?
            .map_err(|e| OAuthError::Redirect(e.to_string()))?;
            Ok(line.trim().to_owned())
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or("usage: oauth_login URL [TOKEN_FILE]")?;
    let file = args.next().unwrap_or_else(|| "tokens.json".into());
    let oauth = OAuthConfig::new(Paste)
        .client_name("oauth_login example")
        .store(FileTokenStore::new(file));
    let client = Client::builder().oauth(oauth).connect_http(&url).await?;
    for tool in client.list_tools().await? {
        println!("{}", tool["name"].as_str().unwrap_or("?"));
    }
    client.close().await?;
    Ok(())
}
