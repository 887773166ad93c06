//! Key-design simulation: one tenant at 10,000 commands/s against the DynamoDB key design
//! (`taskledger_infra::dynamo::schema`, the same functions the store writes with), counting the
//! writes that land on each partition key of the table and of each list index per second, for
//! several index shard counts. A partition takes ~1,000 write units/s; the table prints the
//! hottest key of each index against that. No DynamoDB needed: the keys are what matter.
//!
//! target/release/keysim [--rate 10000] [--seconds 10]

use std::collections::HashMap;

use taskledger_domain::ids::{ContextId, Principal};
use taskledger_domain::wire::TaskState;
use taskledger_infra::dynamo::schema;

/// What one partition sustains (write units per second).
const PARTITION_WCU: u64 = 1000;
/// Commands a task receives over its life (create, messages, agent status updates).
const COMMANDS_PER_TASK: u64 = 6;
/// Tasks of one context before a new one starts.
const TASKS_PER_CONTEXT: u64 = 20;

/// xorshift64*: deterministic, enough for a key distribution.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone)]
struct Live {
    id: String,
    owner: usize,
    context: String,
    state: TaskState,
    sort: u64,
    left: u64,
}

fn arg(args: &[String], name: &str, default: u64) -> u64 {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let rate = arg(&args, "--rate", 10_000);
    let seconds = arg(&args, "--seconds", 10);
    // The owners of one tenant: one service principal sends 60 % of the commands (the worst
    // case for the by-owner key), 200 people the rest.
    let owners: Vec<Principal> = std::iter::once("svc-intake".to_string())
        .chain((0..200).map(|i| format!("user-{i}")))
        .map(|s| Principal::new("acme", &s).expect("principal"))
        .collect();
    println!(
        "one tenant, {rate} commands/s for {seconds} s; {COMMANDS_PER_TASK} commands per task; \
         60 % of them by one principal; partition limit {PARTITION_WCU} WCU/s\n"
    );
    println!("| index shards | table: hottest task key | by-owner | by-context | by-state | by-shard | ListTasks calls |");
    println!("|---|---|---|---|---|---|---|");
    for shards in [1u32, 4, 16, 32] {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        // writes[(index, key, second)] = write units
        let mut writes: HashMap<(&'static str, String, u64), u64> = HashMap::new();
        let mut live: Vec<Live> = Vec::new();
        let mut next_task = 0u64;
        let mut contexts: Vec<(String, u64)> = vec![("c-0".into(), 0); owners.len()];
        let key = |owner: &Principal, base: String, id: &str| {
            let _ = owner;
            schema::index_key(&base, schema::index_shard_of(id, shards), shards)
        };
        for second in 0..seconds {
            for tick in 0..rate {
                let owner = if rng.below(100) < 60 {
                    0
                } else {
                    1 + rng.below(owners.len() as u64 - 1) as usize
                };
                let sort = second * 1_000_000 + tick;
                // New work or a command on a live task of this owner.
                let existing = live
                    .iter()
                    .rposition(|t| t.owner == owner && t.left > 0 && rng.below(4) != 0);
                let o = &owners[owner];
                let mut add = |index: &'static str, k: String, units: u64| {
                    *writes.entry((index, k, second)).or_default() += units;
                };
                match existing {
                    None => {
                        let id = format!("t-{next_task:012}");
                        next_task += 1;
                        let ctx = &mut contexts[owner];
                        ctx.1 += 1;
                        if ctx.1 > TASKS_PER_CONTEXT {
                            *ctx = (format!("c-{next_task}"), 1);
                        }
                        let context = ctx.0.clone();
                        let c = ContextId::parse(&context).expect("context");
                        add("table", schema::task_pk(&id), 4);
                        add("by-owner", key(o, schema::owner_key(o), &id), 1);
                        add("by-context", key(o, schema::context_key(o, &c), &id), 1);
                        add(
                            "by-state",
                            key(o, schema::state_key(o, TaskState::Submitted), &id),
                            1,
                        );
                        add("by-shard", schema::shard_key(schema::shard_of(&id)), 1);
                        live.push(Live {
                            id,
                            owner,
                            context,
                            state: TaskState::Submitted,
                            sort,
                            left: COMMANDS_PER_TASK - 1,
                        });
                    }
                    Some(i) => {
                        let t = &mut live[i];
                        t.left -= 1;
                        let new_state = if t.left == 0 {
                            TaskState::Completed
                        } else if t.left.is_multiple_of(2) {
                            TaskState::InputRequired
                        } else {
                            TaskState::Working
                        };
                        let c = ContextId::parse(&t.context).expect("context");
                        add("table", schema::task_pk(&t.id), 3);
                        // The status time moves: each list index deletes and puts its item.
                        add("by-owner", key(o, schema::owner_key(o), &t.id), 2);
                        add("by-context", key(o, schema::context_key(o, &c), &t.id), 2);
                        add("by-state", key(o, schema::state_key(o, t.state), &t.id), 1);
                        add(
                            "by-state",
                            key(o, schema::state_key(o, new_state), &t.id),
                            1,
                        );
                        t.state = new_state;
                        t.sort = sort;
                    }
                }
            }
            live.retain(|t| t.left > 0);
        }
        let hottest = |index: &str| {
            writes
                .iter()
                .filter(|((ix, _, _), _)| *ix == index)
                .map(|(_, w)| *w)
                .max()
                .unwrap_or(0)
        };
        let cell = |index: &str| {
            let w = hottest(index);
            let mark = if w > PARTITION_WCU { " ✗" } else { "" };
            format!("{w}{mark}")
        };
        println!(
            "| {shards} | {} | {} | {} | {} | {} | {} Query + 1 BatchGetItem |",
            cell("table"),
            cell("by-owner"),
            cell("by-context"),
            cell("by-state"),
            cell("by-shard"),
            shards
        );
    }
    println!("\nCells: write units per second on the hottest partition key of that index (✗: over the limit).");
}
