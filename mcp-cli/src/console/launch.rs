//! The launch file: how the browser is opened without the token on any command line.
//!
//! The opener (`xdg-open`, `open`, `cmd start`) and the browser it starts show their arguments
//! to every local user (`/proc/PID/cmdline`, `ps`). So the console writes a small HTML page
//! that redirects to the tokenized URL into a fresh folder only its user may enter (0700), the
//! file itself 0600, and opens the browser on that file (as Jupyter does). The folder is
//! removed when the console stops.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The launch file and its private folder; both removed on drop.
#[derive(Debug)]
pub(crate) struct Launch {
    folder: PathBuf,
    file: PathBuf,
}

impl Launch {
    /// Writes the page redirecting to `url` into a new private folder of the temporary folder.
    pub(crate) fn write(url: &str) -> std::io::Result<Self> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let folder = std::env::temp_dir().join(format!("mcp-console-{name}"));
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        // A new folder (never one that exists: create fails then), so nobody else placed it.
        builder.create(&folder)?;
        let launch = Self {
            file: folder.join("open.html"),
            folder,
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&launch.file)?;
        let href = escape(url);
        write!(
            file,
            "<!doctype html>\n<html><head><meta charset=\"utf-8\">\
             <meta name=\"referrer\" content=\"no-referrer\">\
             <meta http-equiv=\"refresh\" content=\"0;url={href}\">\
             <title>mcp console</title></head>\
             <body><p><a href=\"{href}\">Open the mcp console</a></p></body></html>\n"
        )?;
        file.sync_all()?;
        Ok(launch)
    }

    /// The launch file, to open.
    pub(crate) fn path(&self) -> &Path {
        &self.file
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.folder);
    }
}

/// `text` for an HTML attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launch_file_is_private_redirects_to_the_url_and_goes_away() {
        let url = "http://127.0.0.1:4000/#token=abc\"<";
        let launch = Launch::write(url).unwrap();
        let text = std::fs::read_to_string(launch.path()).unwrap();
        assert!(
            text.contains("content=\"0;url=http://127.0.0.1:4000/#token=abc&quot;&lt;\""),
            "{text}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(launch.path()), 0o600);
            assert_eq!(mode(launch.path().parent().unwrap()), 0o700);
        }
        let (file, folder) = (launch.path().to_owned(), launch.folder.clone());
        drop(launch);
        assert!(!file.exists() && !folder.exists());
    }
}
