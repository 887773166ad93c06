//! The archive of expiring tasks in S3 (moto's S3 beside its DynamoDB): the local server on
//! DynamoDB with `--archive-bucket` writes each finished task, as it finishes, to
//! `tasks/<tenant>/<id>.ndjson` — the bytes `taskledger export --task` writes for it, which
//! `taskledger import` replays into another store; a task at work is not archived until it
//! finishes; the bucket must exist, and the flag needs the DynamoDB stream.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::json;
use taskledger_app::archive::Selection;
use taskledger_domain::ids::TaskId;
use taskledger_domain::retention::Retention;
use taskledger_infra::s3::{self, BucketName, ARCHIVE_CONTENT_TYPE};
use taskledger_local::archive::{export, import, ArchiveKeys, ImportFlags};
use taskledger_local::{Config, Storage};
use taskledger_tests::{aws_endpoint, fast_timings, Server};

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "taskledger-s3-{name}-{}",
        uuid::Uuid::new_v4().simple()
    ))
}

fn dynamo(prefix: &str, create_tables: bool, pollers: bool) -> Storage {
    Storage::Dynamo {
        index_shards: 1,
        prefix: prefix.to_string(),
        create_tables,
        counter: None,
        pollers,
    }
}

fn archiving(storage: Storage, bucket: &str) -> Config {
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = storage;
    c.timings = fast_timings();
    c.retention = Retention::default();
    c.archive_bucket = Some(BucketName::parse(bucket).unwrap());
    c
}

/// The archive's objects, key → body, once there are `n` of them (30 s at most).
async fn objects(client: &aws_sdk_s3::Client, bucket: &str, n: usize) -> Vec<(String, Vec<u8>)> {
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = client
            .list_objects_v2()
            .bucket(bucket)
            .prefix("tasks/")
            .send()
            .await
            .unwrap();
        let keys: Vec<String> = listed
            .contents()
            .iter()
            .filter_map(|o| o.key().map(str::to_string))
            .collect();
        if keys.len() >= n || Instant::now() > until {
            let mut out = Vec::new();
            for key in keys {
                let got = client
                    .get_object()
                    .bucket(bucket)
                    .key(&key)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(got.content_type(), Some(ARCHIVE_CONTENT_TYPE));
                out.push((key, got.body.collect().await.unwrap().to_vec()));
            }
            out.sort();
            return out;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What `taskledger export --task <id>` writes for the task.
async fn exported(storage: &Storage, id: &str) -> Vec<u8> {
    let file = temp("export.ndjson");
    let task = TaskId::parse(id.to_string()).unwrap();
    export(
        storage,
        &Retention::default(),
        &Selection::Task(task),
        &ArchiveKeys::default(),
        Some(&file),
    )
    .await
    .unwrap();
    std::fs::read(&file).unwrap()
}

#[tokio::test]
async fn finished_tasks_are_archived_to_the_bucket_as_export_writes_them() {
    if !aws_endpoint() {
        return;
    }
    let client = s3::client_from_env().await;
    let bucket = format!("tl-archive-{}", uuid::Uuid::new_v4().simple());
    client.create_bucket().bucket(&bucket).send().await.unwrap();
    let prefix = format!("tl-s3-{}-", uuid::Uuid::new_v4().simple());
    let server = Server::start_with(archiving(dynamo(&prefix, true, true), &bucket)).await;

    let done = server.send_task("tck-artifact-text-s1", "hello").await;
    let done = done["id"].as_str().unwrap().to_string();
    let canceled = server.send_task("tck-input-required-s2", "hi").await;
    let canceled = canceled["id"].as_str().unwrap().to_string();
    server.ok("CancelTask", json!({"id": canceled})).await;
    let waiting = server.send_task("tck-input-required-s3", "hi").await;
    let waiting = waiting["id"].as_str().unwrap().to_string();

    // The two finished tasks, each as its export writes it; the waiting one not yet.
    let store = dynamo(&prefix, false, false);
    let got = objects(&client, &bucket, 2).await;
    let mut want = Vec::new();
    for id in [&done, &canceled] {
        want.push((
            format!("tasks/default/{id}.ndjson"),
            exported(&store, id).await,
        ));
    }
    want.sort();
    assert_eq!(
        got.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        want.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
    for ((key, body), (_, expected)) in got.iter().zip(&want) {
        assert!(body == expected, "{key}: not the export's bytes");
    }

    // Once answered, the third finishes and is archived with its answer.
    server
        .ok(
            "SendMessage",
            json!({"message": {"messageId": "s3-answer", "role": "ROLE_USER", "taskId": waiting,
                "parts": [{"text": "here you are"}]}}),
        )
        .await;
    let got = objects(&client, &bucket, 3).await;
    let key = format!("tasks/default/{waiting}.ndjson");
    let (_, body) = got
        .iter()
        .find(|(k, _)| *k == key)
        .expect("the answered task is archived");
    assert!(String::from_utf8_lossy(body).contains("here you are"));

    // An archived object imports into another store: the same task through the API.
    let file = temp("object.ndjson");
    std::fs::write(&file, body).unwrap();
    let dir = temp("sqlite");
    let restored = import(
        &Storage::Dir(dir.clone()),
        &Retention::forever(),
        &ArchiveKeys::default(),
        &ImportFlags::default(),
        &file,
    )
    .await
    .unwrap();
    assert_eq!(restored.tasks, 1);
    let mut c = Config::in_memory().with_conformance_scenarios();
    c.storage = Storage::Dir(dir);
    let copy = Server::start_with(c).await;
    let params = json!({"id": waiting, "historyLength": 1000});
    assert_eq!(
        server.ok("GetTask", params.clone()).await,
        copy.ok("GetTask", params).await
    );
}

#[tokio::test]
async fn the_archive_needs_an_existing_bucket_and_the_tables_stream() {
    if !aws_endpoint() {
        return;
    }
    let prefix = format!("tl-s3-{}-", uuid::Uuid::new_v4().simple());
    let missing = format!("tl-missing-{}", uuid::Uuid::new_v4().simple());
    let Err(err) = taskledger_local::start(archiving(dynamo(&prefix, true, true), &missing)).await
    else {
        panic!("a missing bucket is refused at start");
    };
    assert!(err.to_string().contains("archive bucket"), "{err}");

    let Err(err) = taskledger_local::start(archiving(Storage::Memory, "tl-archive")).await else {
        panic!("the embedded store has no stream to archive from");
    };
    assert!(err.to_string().contains("--archive-bucket"), "{err}");
}
