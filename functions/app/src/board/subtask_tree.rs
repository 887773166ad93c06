//! The sub-task tree of a task page: the task's parents as links, and its sub-tasks with theirs,
//! level by level, each with its name and state when the caller may see it (a sub-task it may
//! not see shows its id only, and is not followed). Bounded in depth and in tasks read.

use std::collections::VecDeque;

use maud::{html, Markup};
use taskledger_domain::ids::{Principal, TaskId};
use taskledger_domain::task::TaskHead;

use super::board_page::urlencode;
use super::layout::state_label;
use crate::service::Service;

/// Levels of sub-tasks followed below the task.
pub const MAX_TREE_DEPTH: usize = 4;
/// Sub-tasks read for one page at most (the rest are listed without being read).
pub const MAX_TREE_NODES: usize = 100;

struct Node {
    id: String,
    /// Name and state, when the caller may see the task and it was read.
    seen: Option<(String, String)>,
    children: Vec<usize>,
}

/// What is read of one sub-task the caller may see: its name, state and sub-task ids.
struct Read {
    name: String,
    state: String,
    subs: Vec<String>,
}

fn sub_ids(h: &TaskHead) -> Vec<String> {
    h.ext
        .as_ref()
        .map(|d| d.sub_tasks.iter().map(|r| r.task_id.clone()).collect())
        .unwrap_or_default()
}

/// Reads the tree under the task `root` (with sub-tasks `subs`), breadth first: at most
/// [`MAX_TREE_NODES`] reads, [`MAX_TREE_DEPTH`] levels; a repeat is listed once.
async fn walk<F, Fut>(root: &str, subs: Vec<String>, mut read: F) -> Vec<Node>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Option<Read>>,
{
    let mut nodes = vec![Node {
        id: root.to_string(),
        seen: None,
        children: Vec::new(),
    }];
    // (node index, its sub-task ids, depth of those)
    let mut level = VecDeque::from([(0usize, subs, 1usize)]);
    let mut reads = 0;
    while let Some((parent, ids, depth)) = level.pop_front() {
        for id in ids {
            if nodes.iter().any(|n| n.id == id) {
                continue;
            }
            let mut below = Vec::new();
            let mut seen = None;
            if reads < MAX_TREE_NODES {
                reads += 1;
                if let Some(r) = read(id.clone()).await {
                    seen = Some((r.name, r.state));
                    if depth < MAX_TREE_DEPTH {
                        below = r.subs;
                    }
                }
            }
            let at = nodes.len();
            nodes.push(Node {
                id,
                seen,
                children: Vec::new(),
            });
            nodes[parent].children.push(at);
            if !below.is_empty() {
                level.push_back((at, below, depth + 1));
            }
        }
    }
    nodes
}

/// A sub-task as the caller may see it (None when it may not, or it is not there).
async fn read_one(service: &Service, who: &Principal, id: String) -> Option<Read> {
    let id = TaskId::parse(id).ok()?;
    let h = service.ledger().current(&id).await.ok()??.head.clone()?;
    (h.visible_to(who) && !service.expired(&h)).then(|| Read {
        name: h.ext.as_ref().map(|d| d.name.clone()).unwrap_or_default(),
        state: h.status.state.as_str().to_string(),
        subs: sub_ids(&h),
    })
}

fn branch(nodes: &[Node], at: usize) -> Markup {
    let n = &nodes[at];
    html! {
        li {
            a href={ "/board/tasks/" (urlencode(&n.id)) } {
                @match &n.seen {
                    Some((name, _)) if !name.is_empty() => { (name) }
                    _ => { code { (n.id) } }
                }
            }
            @if let Some((_, state)) = &n.seen {
                " " span class={ "badge " (state_label(state)) } { (state_label(state)) }
            }
            @if !n.children.is_empty() {
                ul { @for c in &n.children { (branch(nodes, *c)) } }
            }
        }
    }
}

/// The "Related tasks" section: parents, then the sub-task tree (nothing when there are none).
pub(super) async fn render(service: &Service, who: &Principal, head: &TaskHead) -> Markup {
    let parents: Vec<String> = head
        .ext
        .as_ref()
        .map(|d| d.parent_tasks.iter().map(|r| r.task_id.clone()).collect())
        .unwrap_or_default();
    let nodes = walk(head.id.as_str(), sub_ids(head), |id| {
        read_one(service, who, id)
    })
    .await;
    html! {
        @if !parents.is_empty() || !nodes[0].children.is_empty() {
            section.related {
                h2 { "Related tasks" }
                @if !parents.is_empty() {
                    p { "Part of " @for (i, p) in parents.iter().enumerate() {
                        @if i > 0 { ", " }
                        a href={ "/board/tasks/" (urlencode(p)) } { code { (p) } }
                    } }
                }
                @if !nodes[0].children.is_empty() {
                    ul.subtasks { @for c in &nodes[0].children { (branch(&nodes, *c)) } }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// A tree given as id → sub-task ids; every task is visible.
    async fn walked(tree: &HashMap<String, Vec<String>>) -> Vec<Node> {
        walk("t", tree["t"].clone(), |id| {
            let subs = tree.get(&id).cloned().unwrap_or_default();
            async move {
                Some(Read {
                    name: id,
                    state: "TASK_STATE_WORKING".into(),
                    subs,
                })
            }
        })
        .await
    }

    #[tokio::test]
    async fn the_walk_stops_at_its_depth_and_read_bounds() {
        // a chain one level past the depth bound: the last level is not listed
        let chain: HashMap<String, Vec<String>> = (0..=MAX_TREE_DEPTH + 1)
            .map(|d| {
                let id = |d: usize| {
                    if d == 0 {
                        "t".to_string()
                    } else {
                        format!("c{d}")
                    }
                };
                (id(d), vec![id(d + 1)])
            })
            .collect();
        let nodes = walked(&chain).await;
        assert_eq!(
            nodes.len(),
            1 + MAX_TREE_DEPTH,
            "root and the levels followed"
        );
        assert!(nodes.iter().all(|n| n.id == "t" || n.seen.is_some()));
        // a fan one past the read bound: all listed, the last one not read
        let fan: HashMap<String, Vec<String>> = [(
            "t".to_string(),
            (0..=MAX_TREE_NODES).map(|i| format!("s{i}")).collect(),
        )]
        .into();
        let nodes = walked(&fan).await;
        assert_eq!(nodes.len(), 2 + MAX_TREE_NODES);
        assert_eq!(
            nodes.iter().filter(|n| n.seen.is_some()).count(),
            MAX_TREE_NODES
        );
        // a cycle is listed once
        let cycle: HashMap<String, Vec<String>> = [
            ("t".to_string(), vec!["a".to_string()]),
            ("a".to_string(), vec!["t".to_string(), "a".to_string()]),
        ]
        .into();
        assert_eq!(walked(&cycle).await.len(), 2);
    }
}
