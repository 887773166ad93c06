//! Who is calling. Every request gets a principal or is refused: locally from configured bearer
//! tokens (or the documented anonymous dev principal when none are configured); in Lambda from
//! the claims the API Gateway authorizer verified (`GatewayAuthenticator`).

use std::collections::HashMap;

use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use taskledger_domain::ids::Principal;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token (send Authorization: Bearer <token>)")]
    Missing,
    #[error("unknown bearer token")]
    Unknown,
    #[error("the request carries no authorizer claims")]
    NoClaims,
    #[error("invalid principal in the claims: {0}")]
    BadClaims(String),
}

pub trait Authenticator: Send + Sync + 'static {
    fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError>;
    /// Whether clients must send a bearer token (stated in the agent card).
    fn requires_bearer(&self) -> bool;
}

/// Bearer tokens mapped to principals; with none configured, everyone is the anonymous principal.
pub struct TokenAuthenticator {
    tokens: HashMap<String, Principal>,
    anonymous: Principal,
}

impl TokenAuthenticator {
    pub fn new(tokens: HashMap<String, Principal>) -> Self {
        Self {
            tokens,
            anonymous: Principal::anonymous(),
        }
    }

    /// Parses `token=tenant/subject` entries separated by commas.
    pub fn parse_table(spec: &str) -> Result<HashMap<String, Principal>, String> {
        let mut out = HashMap::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (token, who) = entry
                .split_once('=')
                .ok_or_else(|| format!("token entry {entry:?} is not token=tenant/subject"))?;
            let (tenant, subject) = who
                .split_once('/')
                .ok_or_else(|| format!("principal {who:?} is not tenant/subject"))?;
            if token.is_empty() {
                return Err("a token must not be empty".into());
            }
            out.insert(token.to_string(), Principal::new(tenant, subject)?);
        }
        Ok(out)
    }
}

impl Authenticator for TokenAuthenticator {
    fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError> {
        if self.tokens.is_empty() {
            return Ok(self.anonymous.clone());
        }
        let header = request
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or(AuthError::Missing)?;
        let token = header
            .strip_prefix("Bearer ")
            .or_else(|| header.strip_prefix("bearer "))
            .ok_or(AuthError::Missing)?
            .trim();
        self.tokens.get(token).cloned().ok_or(AuthError::Unknown)
    }

    fn requires_bearer(&self) -> bool {
        !self.tokens.is_empty()
    }
}

/// Claim (or Lambda-authorizer context key) naming the tenant by default; the subject is `sub`.
pub const DEFAULT_TENANT_CLAIM: &str = "tenant";

/// Reads the principal from the API Gateway authorizer: a JWT authorizer's claims (HTTP API) or
/// a Lambda authorizer's context (HTTP or REST API). The gateway has verified them already.
pub struct GatewayAuthenticator {
    tenant_claim: String,
}

impl GatewayAuthenticator {
    pub fn new(tenant_claim: impl Into<String>) -> Self {
        Self {
            tenant_claim: tenant_claim.into(),
        }
    }

    fn principal(&self, get: impl Fn(&str) -> Option<String>) -> Result<Principal, AuthError> {
        let subject = get("sub")
            .or_else(|| get("principalId"))
            .ok_or(AuthError::NoClaims)?;
        let tenant = get(&self.tenant_claim).unwrap_or_else(|| "default".to_string());
        Principal::new(&tenant, &subject).map_err(AuthError::BadClaims)
    }
}

impl Authenticator for GatewayAuthenticator {
    fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError> {
        use lambda_http::request::RequestContext;
        let text = |v: &serde_json::Value| v.as_str().map(str::to_string);
        match request.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV2(ctx)) => {
                let auth = ctx.authorizer.as_ref().ok_or(AuthError::NoClaims)?;
                if let Some(jwt) = &auth.jwt {
                    return self.principal(|k| jwt.claims.get(k).cloned());
                }
                self.principal(|k| auth.fields.get(k).and_then(text))
            }
            Some(RequestContext::ApiGatewayV1(ctx)) => {
                self.principal(|k| ctx.authorizer.fields.get(k).and_then(text))
            }
            _ => Err(AuthError::NoClaims),
        }
    }

    fn requires_bearer(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Request;

    fn parts(auth: Option<&str>) -> Parts {
        let mut b = Request::builder().uri("/a2a");
        if let Some(a) = auth {
            b = b.header(AUTHORIZATION, a);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn without_tokens_everyone_is_anonymous() {
        let a = TokenAuthenticator::new(HashMap::new());
        let p = a.authenticate(&parts(None)).unwrap();
        assert_eq!(p.to_string(), "default/anonymous");
        assert!(!a.requires_bearer());
    }

    #[test]
    fn tokens_map_to_principals_and_others_are_refused() {
        let table = TokenAuthenticator::parse_table("s3cret=acme/alice, other=acme/bob").unwrap();
        let a = TokenAuthenticator::new(table);
        assert_eq!(
            a.authenticate(&parts(Some("Bearer s3cret")))
                .unwrap()
                .to_string(),
            "acme/alice"
        );
        assert_eq!(a.authenticate(&parts(None)), Err(AuthError::Missing));
        assert_eq!(
            a.authenticate(&parts(Some("Bearer nope"))),
            Err(AuthError::Unknown)
        );
        assert_eq!(
            a.authenticate(&parts(Some("Basic x"))),
            Err(AuthError::Missing)
        );
    }

    #[test]
    fn malformed_token_tables_are_refused() {
        assert!(TokenAuthenticator::parse_table("justtoken").is_err());
        assert!(TokenAuthenticator::parse_table("t=noslash").is_err());
        assert!(TokenAuthenticator::parse_table("=a/b").is_err());
    }
}
