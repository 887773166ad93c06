//! The agent card as served: built from the deployment's settings, and signed when a key is
//! configured (a JWS, ES256, with a detached payload over the canonical card, verifiable with
//! the key set at `/.well-known/jwks.json`, which the header names as `jku`). The extended card
//! is signed the same way, since clients verify whichever card they end up with.

use std::sync::Arc;

use taskledger_domain::card::signature::{canonical_payload, jcs, sdk_payload};
use taskledger_domain::ports::CardSigner;
use taskledger_domain::wire::{AgentCard, AgentCardSignature};

/// Path of the key set the card's signatures verify with.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// A public card, with what signs the cards derived from it.
#[derive(Debug, Clone)]
pub struct PublicCard {
    pub card: AgentCard,
    signer: Option<Arc<dyn CardSigner>>,
    jku: String,
}

impl PublicCard {
    /// `card` as served from `base`, signed with `signer` when there is one.
    pub fn new(card: AgentCard, signer: Option<Arc<dyn CardSigner>>, base: &str) -> Self {
        let jku = format!("{}{JWKS_PATH}", base.trim_end_matches('/'));
        let card = sign(signer.as_deref(), &jku, card);
        Self { card, signer, jku }
    }

    /// `card` with this server's signature (its own signatures replaced), or as it is.
    pub fn signed(&self, card: AgentCard) -> AgentCard {
        sign(self.signer.as_deref(), &self.jku, card)
    }
}

impl crate::operations::ServedCard for PublicCard {
    fn card(&self) -> &AgentCard {
        &self.card
    }

    fn signed(&self, card: AgentCard) -> AgentCard {
        PublicCard::signed(self, card)
    }
}

/// Signs the card's RFC 8785 form — the 1.0 card, then the merged card a version-less fetch
/// gets (ADR 031) — and each form an official SDK verifies instead where it differs (the 1.x
/// SDKs drop empty members; a2a-sdk 0.3 reads the card as its 0.3 model): a verifier accepts
/// the card when any signature verifies, so RFC 8785 verifiers of either document and every
/// SDK's do (README, "Security").
fn sign(signer: Option<&dyn CardSigner>, jku: &str, mut card: AgentCard) -> AgentCard {
    card.signatures.clear();
    if let Some(signer) = signer {
        let mut payloads = vec![canonical_payload(&card)];
        let merged = jcs(&crate::v03::card::merged(&card));
        for form in [
            merged,
            sdk_payload(&card),
            crate::v03::card::sdk_payload(&card),
        ] {
            if !payloads.contains(&form) {
                payloads.push(form);
            }
        }
        for payload in payloads {
            let (protected, signature) = signer.sign_detached(payload.as_bytes(), Some(jku));
            card.signatures.push(AgentCardSignature {
                protected,
                signature,
                header: None,
            });
        }
    }
    card
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use p256::ecdsa::signature::Verifier;
    use p256::ecdsa::{Signature, VerifyingKey};
    use serde_json::Value;

    use super::*;

    #[test]
    fn a_signed_card_verifies_with_the_published_key_and_a_changed_one_does_not() {
        let key = p256::ecdsa::SigningKey::from_slice(&[9u8; 32]).unwrap();
        // The adapter that signs in production (the test may name it; the product code does not).
        let signer = Arc::new(taskledger_infra::webhook::PushSigner::from_key(key.clone()));
        let card = taskledger_domain::card::agent_card(&taskledger_domain::card::CardSettings {
            public_url: "http://h:1".into(),
            name: "n".into(),
            description: "d".into(),
            version: "1".into(),
            auth: taskledger_domain::card::CardAuth::Bearer,
            served: taskledger_domain::card::Served::all(),
            grpc_url: None,
            extended_card: true,
        });
        let public = PublicCard::new(
            card,
            Some(signer.clone() as Arc<dyn CardSigner>),
            "http://h:1/",
        );
        let sig = &public.card.signatures[0];
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&sig.protected).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"], signer.kid());
        assert_eq!(header["jku"], "http://h:1/.well-known/jwks.json");
        let verify = |c: &AgentCard| {
            let input = format!(
                "{}.{}",
                sig.protected,
                URL_SAFE_NO_PAD.encode(canonical_payload(c))
            );
            let s =
                Signature::from_slice(&URL_SAFE_NO_PAD.decode(&sig.signature).unwrap()).unwrap();
            VerifyingKey::from(&key)
                .verify(input.as_bytes(), &s)
                .is_ok()
        };
        assert!(verify(&public.card));
        let mut changed = public.card.clone();
        changed.description = "something else".into();
        assert!(!verify(&changed));
        // unsigned without a key
        assert!(PublicCard::new(public.card.clone(), None, "http://h")
            .card
            .signatures
            .is_empty());
    }
}
