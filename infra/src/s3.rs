//! The archive bucket (S3): each expiring task as one object in the archive format, written
//! whole (`ArchiveSink`), encrypted at rest by S3 (SSE-S3). With `AWS_ENDPOINT_URL` set (moto,
//! LocalStack) objects are addressed by path, as emulators on 127.0.0.1 need.

use async_trait::async_trait;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;
use taskledger_domain::ports::{ArchiveSink, StoreError};

/// The content type of an archive object (one JSON document a line).
pub const ARCHIVE_CONTENT_TYPE: &str = "application/x-ndjson";

/// An S3 client configured from the environment (region, credentials, endpoint).
pub async fn client_from_env() -> aws_sdk_s3::Client {
    let shared = aws_config::load_from_env().await;
    let emulated = shared.endpoint_url().is_some_and(|e| !e.is_empty());
    let config = aws_sdk_s3::config::Builder::from(&shared)
        .force_path_style(emulated)
        .build();
    aws_sdk_s3::Client::from_conf(config)
}

/// The shortest and longest bucket names S3 takes.
pub const MIN_BUCKET_NAME: usize = 3;
pub const MAX_BUCKET_NAME: usize = 63;

/// A bucket name as S3 takes it: 3–63 lowercase letters, digits, dots and hyphens, beginning
/// and ending with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketName(String);

impl BucketName {
    pub fn parse(name: &str) -> Result<Self, String> {
        let len = name.len();
        if !(MIN_BUCKET_NAME..=MAX_BUCKET_NAME).contains(&len) {
            return Err(format!(
                "bucket name {name:?} has {len} characters; S3 takes {MIN_BUCKET_NAME} to {MAX_BUCKET_NAME}"
            ));
        }
        let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        let bytes = name.as_bytes();
        if !bytes.iter().all(|&c| edge(c) || c == b'.' || c == b'-')
            || !edge(bytes[0])
            || !edge(bytes[len - 1])
            || name.contains("..")
        {
            return Err(format!(
                "bucket name {name:?}: lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit"
            ));
        }
        Ok(Self(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Clone)]
pub struct S3Archive {
    client: aws_sdk_s3::Client,
    bucket: BucketName,
}

impl S3Archive {
    pub fn new(client: aws_sdk_s3::Client, bucket: BucketName) -> Self {
        Self { client, bucket }
    }

    /// Whether the bucket is there and reachable (asked once at start).
    pub async fn check(&self) -> Result<(), StoreError> {
        self.client
            .head_bucket()
            .bucket(self.bucket.as_str())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                StoreError::Unavailable(format!(
                    "archive bucket {}: {}",
                    self.bucket.as_str(),
                    aws_sdk_s3::error::DisplayErrorContext(&e)
                ))
            })
    }
}

#[async_trait]
impl ArchiveSink for S3Archive {
    async fn put(&self, key: &str, body: Vec<u8>) -> Result<(), StoreError> {
        self.client
            .put_object()
            .bucket(self.bucket.as_str())
            .key(key)
            .content_type(ARCHIVE_CONTENT_TYPE)
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from(body))
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                StoreError::Unavailable(format!(
                    "S3 PutObject to {}: {}",
                    self.bucket.as_str(),
                    aws_sdk_s3::error::DisplayErrorContext(&e)
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names_are_taken_at_their_bounds_and_refused_past_them() {
        assert!(BucketName::parse(&"a".repeat(MIN_BUCKET_NAME)).is_ok());
        assert!(BucketName::parse(&"a".repeat(MIN_BUCKET_NAME - 1)).is_err());
        assert!(BucketName::parse(&"a".repeat(MAX_BUCKET_NAME)).is_ok());
        assert!(BucketName::parse(&"a".repeat(MAX_BUCKET_NAME + 1)).is_err());
        assert!(BucketName::parse("acme-task.archive-1").is_ok());
        for bad in [
            "Acme",
            "acme_tasks",
            "-acme",
            "acme-",
            "acme..tasks",
            "acme/tasks",
            "",
        ] {
            assert!(BucketName::parse(bad).is_err(), "{bad}");
        }
    }
}
