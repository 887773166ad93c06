//! The four work artifacts a handoff's task may carry (DMP §8.6): `answer`, `pr`, `diffstat`
//! and `evidence`, each an Artifact whose `artifactId` is its kind with one JSON data part.
//! Each is at most `MAX_WORK_ARTIFACT_BYTES` as JSON: beyond that `perFile` / `items` are cut
//! (from the end) and `metadata.truncated` is `true`. Nothing else — no branch names, no
//! commit ids — is ever written.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::work::WORK_URI;
use crate::wire::{Artifact, Part};

/// Largest work artifact, as JSON.
pub const MAX_WORK_ARTIFACT_BYTES: usize = 64 * 1024;
/// Most files a `diffstat` lists.
pub const MAX_PER_FILE: usize = 200;
/// Most commands an `evidence` lists.
pub const MAX_EVIDENCE_ITEMS: usize = 50;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStat {
    pub path: String,
    pub insertions: u64,
    pub deletions: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceItem {
    pub command: String,
    pub exit_code: i64,
    pub duration_ms: u64,
    pub summary: String,
}

/// A work artifact, as the agent or an operator reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "kind",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum WorkArtifact {
    Answer {
        message_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        choice: Option<String>,
    },
    Pr {
        url: String,
        number: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<PrState>,
    },
    Diffstat {
        files: u64,
        insertions: u64,
        deletions: u64,
        #[serde(default)]
        per_file: Vec<FileStat>,
    },
    Evidence {
        items: Vec<EvidenceItem>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PrState {
    Open,
    Merged,
}

impl WorkArtifact {
    /// Its kind: the artifact's id.
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::Answer { .. } => "answer",
            Self::Pr { .. } => "pr",
            Self::Diffstat { .. } => "diffstat",
            Self::Evidence { .. } => "evidence",
        }
    }

    fn body(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.remove("kind");
        }
        v
    }

    /// The artifact, cut to size: list entries past their count limit, then from the end
    /// until the JSON fits, with `metadata.truncated` when anything was cut.
    pub fn to_artifact(&self) -> Artifact {
        let mut this = self.clone();
        let mut truncated = false;
        match &mut this {
            Self::Diffstat { per_file, .. } if per_file.len() > MAX_PER_FILE => {
                per_file.truncate(MAX_PER_FILE);
                truncated = true;
            }
            Self::Evidence { items } if items.len() > MAX_EVIDENCE_ITEMS => {
                items.truncate(MAX_EVIDENCE_ITEMS);
                truncated = true;
            }
            _ => {}
        }
        loop {
            let artifact = this.render(truncated);
            let size = serde_json::to_vec(&artifact).map_or(0, |b| b.len());
            if size <= MAX_WORK_ARTIFACT_BYTES {
                return artifact;
            }
            let cut = match &mut this {
                Self::Diffstat { per_file, .. } => per_file.pop().is_some(),
                Self::Evidence { items } => items.pop().is_some(),
                _ => false,
            };
            truncated = true;
            if !cut {
                // Nothing left to cut (an oversized answer or pr is refused where it enters).
                return this.render(true);
            }
        }
    }

    fn render(&self, truncated: bool) -> Artifact {
        let mut metadata = serde_json::Map::new();
        if truncated {
            metadata.insert("truncated".into(), json!(true));
        }
        let mut part = Part::data(self.body());
        part.media_type = Some("application/json".into());
        Artifact {
            artifact_id: self.kind().into(),
            name: Some(self.kind().into()),
            description: None,
            parts: vec![part],
            metadata: (!metadata.is_empty()).then_some(metadata),
            extensions: vec![WORK_URI.into()],
            end_generation: Default::default(),
            start_generation: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(a: &Artifact) -> usize {
        serde_json::to_vec(a).unwrap().len()
    }

    #[test]
    fn each_kind_is_its_artifact_id_with_one_json_part() {
        let pr = WorkArtifact::Pr {
            url: "https://git.example.com/p/1".into(),
            number: 1,
            state: Some(PrState::Open),
        };
        let a = pr.to_artifact();
        assert_eq!(a.artifact_id, "pr");
        assert_eq!(a.parts.len(), 1);
        let body = serde_json::to_value(&a.parts[0]).unwrap();
        assert_eq!(
            body["data"],
            json!({"url": "https://git.example.com/p/1", "number": 1, "state": "open"})
        );
        assert!(a.metadata.is_none(), "nothing cut");
    }

    #[test]
    fn a_diffstat_keeps_at_most_200_files_and_says_it_was_cut() {
        let file = |i: usize| FileStat {
            path: format!("src/f{i}.rs"),
            insertions: 1,
            deletions: 0,
        };
        let at = WorkArtifact::Diffstat {
            files: 200,
            insertions: 200,
            deletions: 0,
            per_file: (0..MAX_PER_FILE).map(file).collect(),
        };
        assert!(at.to_artifact().metadata.is_none());
        let past = WorkArtifact::Diffstat {
            files: 201,
            insertions: 201,
            deletions: 0,
            per_file: (0..=MAX_PER_FILE).map(file).collect(),
        };
        let a = past.to_artifact();
        assert_eq!(a.metadata.unwrap()["truncated"], true);
        let body = serde_json::to_value(&a.parts[0]).unwrap();
        assert_eq!(
            body["data"]["perFile"].as_array().unwrap().len(),
            MAX_PER_FILE
        );
        assert_eq!(body["data"]["files"], 201, "the totals stay");
    }

    #[test]
    fn evidence_past_64_kib_is_cut_to_fit() {
        let item = |i: usize| EvidenceItem {
            command: format!("cargo test {i}"),
            exit_code: 0,
            duration_ms: 10,
            summary: "x".repeat(2_000),
        };
        let e = WorkArtifact::Evidence {
            items: (0..MAX_EVIDENCE_ITEMS).map(item).collect(),
        };
        let a = e.to_artifact();
        assert!(size(&a) <= MAX_WORK_ARTIFACT_BYTES, "{}", size(&a));
        assert_eq!(a.metadata.unwrap()["truncated"], true);
        let small = WorkArtifact::Evidence {
            items: vec![item(1)],
        };
        assert!(small.to_artifact().metadata.is_none());
    }
}
