//! Downloading a model file once: resumable (an interrupted download continues
//! from its `.part` file with an HTTP `Range` request), checked (the size the
//! server announced, and the SHA-256 when the hub gives it in `X-Linked-Etag` or
//! an `ETag`, as it does for LFS files) and atomic (the file appears under its name
//! only when complete and checked: a rename of the `.part` file).

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{CONTENT_LENGTH, CONTENT_RANGE, ETAG, HeaderMap, LOCATION, RANGE};
use reqwest::{StatusCode, redirect};
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;

use super::DownloadProgress;
use crate::error::LocalError;

/// Redirects followed before giving up (the hub sends one, to its CDN).
const MAX_REDIRECTS: usize = 10;

/// What the server said about the file.
#[derive(Debug, Default)]
struct Announced {
    size: Option<u64>,
    sha256: Option<String>,
}

impl Announced {
    /// Takes what `headers` say: the hub's `X-Linked-Size`/`X-Linked-Etag` (on
    /// its redirect) win over a plain `ETag`.
    fn read(&mut self, headers: &HeaderMap) {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        if let Some(size) = text("x-linked-size").and_then(|v| v.trim().parse().ok()) {
            self.size = Some(size);
        }
        let etag = text("x-linked-etag").and_then(sha256_of_etag).or_else(|| {
            headers
                .get(ETAG)
                .and_then(|v| v.to_str().ok())
                .and_then(sha256_of_etag)
        });
        if self.sha256.is_none() {
            self.sha256 = etag;
        }
    }
}

/// The SHA-256 in an ETag (`"<64 hex>"`, maybe weak); `None` for other tags.
fn sha256_of_etag(etag: &str) -> Option<String> {
    let tag = etag.trim().trim_start_matches("W/").trim_matches('"');
    (tag.len() == 64 && tag.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| tag.to_ascii_lowercase())
}

fn part_path(target: &Path) -> PathBuf {
    let mut name = target.file_name().unwrap_or_default().to_os_string();
    name.push(".part");
    target.with_file_name(name)
}

/// Downloads `url` to `target`, resuming a `target.part` left by an earlier try,
/// and tells `progress` how far it got.
///
/// The file is written as `target.part` and renamed to `target` once its size (and
/// its SHA-256, when the server announced one) are checked; redirects are followed
/// up to 10 times, by this function, so that the hub's `X-Linked-*` headers on them
/// are read. A file longer than announced or of another SHA-256 is deleted; an
/// interrupted transfer keeps its `.part` file for the next try.
///
/// # Errors
/// [`LocalError::DownloadTransfer`] (resumable), [`LocalError::DownloadStatus`],
/// [`LocalError::DownloadCorrupt`] or [`LocalError::DownloadIo`].
pub async fn download(
    url: &str,
    target: &Path,
    progress: &mut dyn DownloadProgress,
) -> Result<(), LocalError> {
    let io = |path: &Path, error: std::io::Error| LocalError::DownloadIo {
        path: path.to_path_buf(),
        message: error.to_string(),
    };
    let transfer = |message: String| LocalError::DownloadTransfer {
        url: url.to_owned(),
        message,
    };
    if let Some(dir) = target.parent() {
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| io(dir, e))?;
    }
    let part = part_path(target);
    let mut offset = tokio::fs::metadata(&part).await.map_or(0, |m| m.len());

    let client = oxydra_http::client_builder()
        .redirect(redirect::Policy::none())
        .connect_timeout(Duration::from_secs(30))
        .read_timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| transfer(e.to_string()))?;
    let mut announced = Announced::default();
    let mut current = reqwest::Url::parse(url).map_err(|e| transfer(e.to_string()))?;
    let mut redirects = 0;
    let response = loop {
        let mut request = client.get(current.clone());
        if offset > 0 {
            request = request.header(RANGE, format!("bytes={offset}-"));
        }
        let response = request.send().await.map_err(|e| transfer(e.to_string()))?;
        announced.read(response.headers());
        let status = response.status();
        if status.is_redirection() {
            redirects += 1;
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .filter(|_| redirects <= MAX_REDIRECTS)
                .ok_or_else(|| transfer(format!("bad redirect ({status})")))?;
            current = current
                .join(location)
                .map_err(|e| transfer(e.to_string()))?;
            continue;
        }
        if status == StatusCode::RANGE_NOT_SATISFIABLE && offset > 0 {
            // The part file is not a prefix the server knows: start over.
            tokio::fs::remove_file(&part)
                .await
                .map_err(|e| io(&part, e))?;
            offset = 0;
            continue;
        }
        if !status.is_success() {
            return Err(LocalError::DownloadStatus {
                url: url.to_owned(),
                status: status.as_u16(),
            });
        }
        break response;
    };

    let resumed = response.status() == StatusCode::PARTIAL_CONTENT;
    if !resumed {
        offset = 0;
    }
    let headers = response.headers();
    let total = headers
        .get(CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit('/').next())
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| {
            headers
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                .map(|len| len + offset)
        });
    let expected_size = announced.size.or(total);

    let mut file = tokio::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(resumed)
        .truncate(!resumed)
        .open(&part)
        .await
        .map_err(|e| io(&part, e))?;
    let label = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    progress.start(&label, expected_size, offset);
    let mut body = response.bytes_stream();
    let mut written = offset;
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| transfer(e.to_string()))?;
        written += chunk.len() as u64;
        if expected_size.is_some_and(|size| written > size) {
            drop(file);
            let _ = tokio::fs::remove_file(&part).await;
            return Err(LocalError::DownloadCorrupt {
                url: url.to_owned(),
                message: "more bytes than announced".into(),
            });
        }
        file.write_all(&chunk).await.map_err(|e| io(&part, e))?;
        progress.advance(chunk.len() as u64);
    }
    file.flush().await.map_err(|e| io(&part, e))?;
    drop(file);
    progress.finish();

    if let Some(size) = expected_size
        && written != size
    {
        return Err(transfer(format!("got {written} of {size} bytes")));
    }
    if let Some(expected) = &announced.sha256 {
        let path = part.clone();
        let actual = tokio::task::spawn_blocking(move || sha256_file(&path))
            .await
            .map_err(|e| transfer(e.to_string()))?
            .map_err(|e| io(&part, e))?;
        if &actual != expected {
            let _ = tokio::fs::remove_file(&part).await;
            return Err(LocalError::DownloadCorrupt {
                url: url.to_owned(),
                message: format!("sha256 {actual}, expected {expected}"),
            });
        }
    }
    tokio::fs::rename(&part, target)
        .await
        .map_err(|e| io(target, e))
}

fn sha256_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;

    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(buffer.get(..read).unwrap_or_default());
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests;
