//! A small Server-Sent Events reader on reqwest's body chunks: lines, blank-line-ended
//! blocks, comments, `id:` and one `data:` JSON document per event.

use serde_json::Value;

use super::{check_stream_response, Item, StreamEvent, REQUEST_ID};

/// Reads SSE lines until an event or a comment is complete (a blank line ends it).
pub(super) async fn read_sse(
    resp: &mut reqwest::Response,
    buf: &mut Vec<u8>,
    block: &mut Vec<String>,
    envelope: bool,
) -> Option<Item> {
    loop {
        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = buf.drain(..=nl).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line = String::from_utf8(line).expect("SSE is UTF-8");
            if !line.is_empty() {
                block.push(line);
                continue;
            }
            if block.is_empty() {
                continue;
            }
            let lines = std::mem::take(block);
            if let Some(item) = sse_item(&lines, envelope) {
                return Some(item);
            }
        }
        match resp.chunk().await {
            Ok(Some(bytes)) => buf.extend_from_slice(&bytes),
            Ok(None) => {
                assert!(
                    block.is_empty() && buf.is_empty(),
                    "the stream closed inside an event (no blank line after it): {block:?} {:?}",
                    String::from_utf8_lossy(buf)
                );
                return None;
            }
            Err(e) => panic!("the SSE stream broke: {e}"),
        }
    }
}

/// One SSE block as an item: all comments → a comment; else its event (blocks without data
/// dispatch nothing, as the SSE spec says).
fn sse_item(lines: &[String], envelope: bool) -> Option<Item> {
    let (comments, fields): (Vec<&String>, Vec<&String>) =
        lines.iter().partition(|l| l.starts_with(':'));
    if fields.is_empty() {
        let text: Vec<&str> = comments.iter().map(|c| c.as_str()).collect();
        return Some(Item::Comment(text.join("\n")));
    }
    let mut id = None;
    let mut data: Vec<&str> = Vec::new();
    for line in &fields {
        let (name, value) = line.split_once(':').unwrap_or((line.as_str(), ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match name {
            "id" => {
                id = Some(value.parse::<u64>().unwrap_or_else(|_| {
                    panic!("an SSE id that is not an event sequence: {value:?}")
                }))
            }
            "data" => data.push(value),
            "event" => assert_ne!(value, "error", "an error event in the stream: {lines:?}"),
            "retry" => {}
            other => panic!("an SSE field no client knows: {other:?} in {lines:?}"),
        }
    }
    if data.is_empty() {
        return None;
    }
    assert_eq!(
        data.len(),
        1,
        "one event's JSON is on one data: line: {lines:?}"
    );
    let doc: Value = serde_json::from_str(data[0])
        .unwrap_or_else(|e| panic!("an SSE data line that is not JSON ({e}): {}", data[0]));
    let data = if envelope {
        let obj = doc.as_object().expect("a JSON-RPC response object");
        assert_eq!(doc["jsonrpc"], "2.0", "{doc}");
        assert_eq!(
            doc["id"], REQUEST_ID,
            "each event echoes the request id: {doc}"
        );
        assert!(
            obj.get("error").is_none(),
            "an error inside the stream: {doc}"
        );
        assert!(
            obj.keys()
                .all(|k| ["jsonrpc", "id", "result"].contains(&k.as_str())),
            "{doc}"
        );
        doc["result"].clone()
    } else {
        doc
    };
    check_stream_response(&data);
    let raw: Vec<&str> = fields.iter().map(|l| l.as_str()).collect();
    Some(Item::Event(StreamEvent {
        id,
        data,
        raw: raw.join("\n").into_bytes(),
    }))
}
