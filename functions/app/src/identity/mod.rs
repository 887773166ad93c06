//! Who is calling. Every request gets a principal or is refused: locally from configured bearer
//! tokens (or the documented anonymous dev principal when none are configured); in Lambda from
//! the claims the API Gateway authorizer verified (`GatewayAuthenticator`), or behind a Function
//! URL with `AuthType: AWS_IAM` from the IAM identity Lambda verified (`IamAuthenticator`); on
//! the local server or a container, from JWTs verified against a JWKS (`jwt`).

pub mod jwt;

use std::collections::HashMap;

use async_trait::async_trait;

use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use taskledger_domain::card::CardAuth;
use taskledger_domain::ids::{Principal, MAX_PRINCIPAL_BYTES};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token (send Authorization: Bearer <token>)")]
    Missing,
    #[error("unknown bearer token")]
    Unknown,
    #[error("invalid bearer token: {0}")]
    InvalidToken(String),
    #[error("the request carries no authorizer claims")]
    NoClaims,
    #[error("invalid principal in the claims: {0}")]
    BadClaims(String),
    #[error(
        "the request carries no verified IAM identity (sign it with SigV4; the Function URL's \
         AuthType must be AWS_IAM)"
    )]
    NoIamIdentity,
}

#[async_trait]
pub trait Authenticator: Send + Sync + 'static {
    async fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError>;
    /// How clients authenticate (stated in the agent card).
    fn card_auth(&self) -> CardAuth;
    /// What a board session keeps of `token`, a bearer credential this authenticator has just
    /// accepted, to check it again later without keeping it (`None`: its credentials cannot
    /// be checked again, so it starts no sessions).
    fn print(&self, _token: &str) -> Option<CredentialPrint> {
        None
    }
    /// Whether a credential of this print would be accepted as `who` now: the token still
    /// configured, the JWT unexpired and its key still published.
    async fn accepts_print(&self, _print: &CredentialPrint, _who: &Principal) -> bool {
        false
    }
}

/// What a board session keeps of the credential it was started with: enough to tell whether
/// that credential would still be accepted, never the credential itself.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum CredentialPrint {
    /// A configured token: its SHA-256, hex.
    Token { sha256: String },
    /// A JWT: the key that signed it, and when it expires (Unix seconds).
    Jwt { kid: String, exp: u64 },
}

impl CredentialPrint {
    /// A configured token's print.
    pub fn of_token(token: &str) -> Self {
        use sha2::{Digest, Sha256};
        Self::Token {
            sha256: Sha256::digest(token.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        }
    }
}

/// Configured tokens by their prints: what a print of one still maps to.
fn prints_of(tokens: &HashMap<String, Principal>) -> HashMap<CredentialPrint, Principal> {
    tokens
        .iter()
        .map(|(t, p)| (CredentialPrint::of_token(t), p.clone()))
        .collect()
}

/// Bearer tokens mapped to principals; with none configured, everyone is the anonymous principal.
pub struct TokenAuthenticator {
    tokens: HashMap<String, Principal>,
    /// The tokens' prints (board sessions check theirs again).
    prints: HashMap<CredentialPrint, Principal>,
    anonymous: Principal,
}

impl TokenAuthenticator {
    pub fn new(tokens: HashMap<String, Principal>) -> Self {
        Self {
            prints: prints_of(&tokens),
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

/// Every binding's first step: who is calling (or Unauthenticated), then whether that caller
/// may make another request now (the service's rate limit).
pub async fn caller(
    auth: &dyn Authenticator,
    service: &crate::service::Service,
    request: &Parts,
) -> Result<Principal, crate::error::AppError> {
    let who = auth.authenticate(request).await.map_err(|e| {
        crate::error::AppError::protocol(
            taskledger_domain::error::ErrorKind::Unauthenticated,
            e.to_string(),
        )
    })?;
    service.admit(&who)?;
    Ok(who)
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer(request: &Parts) -> Result<&str, AuthError> {
    let header = request
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .ok_or(AuthError::Missing)?;
    Ok(header
        .strip_prefix("Bearer ")
        .or_else(|| header.strip_prefix("bearer "))
        .ok_or(AuthError::Missing)?
        .trim())
}

#[async_trait]
impl Authenticator for TokenAuthenticator {
    async fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError> {
        if self.tokens.is_empty() {
            return Ok(self.anonymous.clone());
        }
        let token = bearer(request)?;
        self.tokens.get(token).cloned().ok_or(AuthError::Unknown)
    }

    fn print(&self, token: &str) -> Option<CredentialPrint> {
        self.tokens
            .contains_key(token)
            .then(|| CredentialPrint::of_token(token))
    }

    async fn accepts_print(&self, print: &CredentialPrint, who: &Principal) -> bool {
        self.prints.get(print) == Some(who)
    }

    fn card_auth(&self) -> CardAuth {
        if self.tokens.is_empty() {
            CardAuth::None
        } else {
            CardAuth::Bearer
        }
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

#[async_trait]
impl Authenticator for GatewayAuthenticator {
    async fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError> {
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

    fn card_auth(&self) -> CardAuth {
        CardAuth::Bearer
    }
}

/// Reads the principal from the IAM identity Lambda verified from the request's SigV4 signature
/// (`requestContext.authorizer.iam` of a Function URL with `AuthType: AWS_IAM`, or of an HTTP API
/// route with IAM authorization): the tenant is the caller's account, the subject its ARN. A
/// request without that identity is refused, so a Function URL left at `AuthType: NONE` serves
/// nobody.
pub struct IamAuthenticator;

#[async_trait]
impl Authenticator for IamAuthenticator {
    async fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError> {
        use lambda_http::request::RequestContext;
        match request.extensions.get::<RequestContext>() {
            Some(RequestContext::ApiGatewayV2(ctx)) => {
                let iam = ctx.authorizer.as_ref().and_then(|a| a.iam.as_ref());
                let iam = iam.ok_or(AuthError::NoIamIdentity)?;
                iam_principal(
                    iam.account_id.as_deref(),
                    iam.user_arn.as_deref(),
                    iam.user_id.as_deref(),
                )
            }
            _ => Err(AuthError::NoIamIdentity),
        }
    }

    fn card_auth(&self) -> CardAuth {
        CardAuth::AwsSigV4
    }
}

/// `arn:aws:sts::111122223333:assumed-role/Role/Session` → `…:assumed-role/Role` (and the unique
/// id `AROA…:Session` → `AROA…`): every session of a role is the role, so a client whose
/// credentials are refreshed under a new session name still sees its tasks.
fn without_session(id: &str) -> &str {
    if let Some((prefix, rest)) = id.split_once(":assumed-role/") {
        let role = rest.split('/').next().unwrap_or(rest);
        return &id[..prefix.len() + ":assumed-role/".len() + role.len()];
    }
    match id.split_once(':') {
        Some((unique, _session)) if unique.starts_with("AROA") => unique,
        _ => id,
    }
}

/// The principal of a verified IAM identity: tenant = the caller's account id, subject = its ARN
/// without a role session (or, for an ARN longer than a subject may be, the unique id).
fn iam_principal(
    account: Option<&str>,
    arn: Option<&str>,
    user_id: Option<&str>,
) -> Result<Principal, AuthError> {
    fn present(v: Option<&str>) -> Option<&str> {
        v.map(str::trim).filter(|v| !v.is_empty())
    }
    let account = present(account).ok_or(AuthError::NoIamIdentity)?;
    let arn = present(arn).map(without_session);
    let subject = match arn {
        Some(arn) if arn.len() <= MAX_PRINCIPAL_BYTES => arn,
        _ => present(user_id)
            .map(without_session)
            .ok_or(AuthError::NoIamIdentity)?,
    };
    Principal::new(account, subject).map_err(AuthError::BadClaims)
}

#[async_trait]
impl Authenticator for jwt::JwtAuthenticator {
    async fn authenticate(&self, request: &Parts) -> Result<Principal, AuthError> {
        self.authenticate_bearer(bearer(request)?).await
    }

    fn card_auth(&self) -> CardAuth {
        CardAuth::Jwt
    }

    fn print(&self, token: &str) -> Option<CredentialPrint> {
        jwt::JwtAuthenticator::print(self, token)
    }

    async fn accepts_print(&self, print: &CredentialPrint, who: &Principal) -> bool {
        jwt::JwtAuthenticator::accepts_print(self, print, who).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    trait Now {
        fn authenticate_now(&self, request: &Parts) -> Result<Principal, AuthError>;
    }

    impl<A: Authenticator> Now for A {
        fn authenticate_now(&self, request: &Parts) -> Result<Principal, AuthError> {
            futures_util::FutureExt::now_or_never(self.authenticate(request))
                .expect("ready at once")
        }
    }
    use axum::http::Request;
    use serde_json::json;

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
        let p = a.authenticate_now(&parts(None)).unwrap();
        assert_eq!(p.to_string(), "default/anonymous");
        assert_eq!(a.card_auth(), CardAuth::None);
    }

    #[test]
    fn tokens_map_to_principals_and_others_are_refused() {
        let table = TokenAuthenticator::parse_table("s3cret=acme/alice, other=acme/bob").unwrap();
        let a = TokenAuthenticator::new(table);
        assert_eq!(
            a.authenticate_now(&parts(Some("Bearer s3cret")))
                .unwrap()
                .to_string(),
            "acme/alice"
        );
        assert_eq!(a.authenticate_now(&parts(None)), Err(AuthError::Missing));
        assert_eq!(
            a.authenticate_now(&parts(Some("Bearer nope"))),
            Err(AuthError::Unknown)
        );
        assert_eq!(
            a.authenticate_now(&parts(Some("Basic x"))),
            Err(AuthError::Missing)
        );
    }

    #[test]
    fn malformed_token_tables_are_refused() {
        assert!(TokenAuthenticator::parse_table("justtoken").is_err());
        assert!(TokenAuthenticator::parse_table("t=noslash").is_err());
        assert!(TokenAuthenticator::parse_table("=a/b").is_err());
    }

    /// A Function URL event (the shape of the AWS documentation's example, AuthType AWS_IAM)
    /// through lambda_http, as the function receives it.
    fn function_url_request(edit: impl FnOnce(&mut serde_json::Value)) -> Parts {
        let mut event: serde_json::Value =
            serde_json::from_str(include_str!("../../fixtures/function-url-iam-request.json"))
                .unwrap();
        edit(&mut event);
        let event: lambda_http::request::LambdaRequest = serde_json::from_value(event).unwrap();
        lambda_http::Request::from(event).into_parts().0
    }

    #[test]
    fn a_function_url_caller_is_its_account_and_role() {
        let parts = function_url_request(|_| {});
        assert_eq!(parts.uri.path(), "/a2a");
        let p = IamAuthenticator.authenticate_now(&parts).unwrap();
        assert_eq!(p.tenant.as_str(), "111122223333");
        assert_eq!(
            p.subject.as_str(),
            "arn:aws:sts::111122223333:assumed-role/a2a-client"
        );
        assert_eq!(IamAuthenticator.card_auth(), CardAuth::AwsSigV4);
        // A user is its ARN.
        let parts = function_url_request(|e| {
            e["requestContext"]["authorizer"]["iam"]["userArn"] =
                "arn:aws:iam::111122223333:user/ops/bob".into();
        });
        let p = IamAuthenticator.authenticate_now(&parts).unwrap();
        assert_eq!(
            p.to_string(),
            "111122223333/arn:aws:iam::111122223333:user/ops/bob"
        );
    }

    #[test]
    fn an_over_long_arn_falls_back_to_the_unique_id() {
        let long = format!("arn:aws:iam::111122223333:user/{}/bob", "p".repeat(120));
        let parts = function_url_request(|e| {
            e["requestContext"]["authorizer"]["iam"]["userArn"] = long.clone().into();
            e["requestContext"]["authorizer"]["iam"]["userId"] = "AIDAEXAMPLEUSERID0001".into();
        });
        let p = IamAuthenticator.authenticate_now(&parts).unwrap();
        assert_eq!(p.subject.as_str(), "AIDAEXAMPLEUSERID0001");
    }

    #[test]
    fn a_function_url_request_without_a_verified_iam_identity_is_refused() {
        // AuthType NONE: Lambda sets the authorizer to null.
        let parts = function_url_request(|e| e["requestContext"]["authorizer"] = json!(null));
        assert_eq!(
            IamAuthenticator.authenticate_now(&parts),
            Err(AuthError::NoIamIdentity)
        );
        // JWT claims are not an IAM identity.
        let parts = function_url_request(|e| {
            e["requestContext"]["authorizer"] =
                json!({"jwt": {"claims": {"sub": "x"}, "scopes": null}});
        });
        assert_eq!(
            IamAuthenticator.authenticate_now(&parts),
            Err(AuthError::NoIamIdentity)
        );
        // An identity without its account.
        let parts = function_url_request(|e| {
            e["requestContext"]["authorizer"]["iam"]["accountId"] = json!(null);
        });
        assert_eq!(
            IamAuthenticator.authenticate_now(&parts),
            Err(AuthError::NoIamIdentity)
        );
        // Headers claiming an identity are not one, and neither is a request from outside Lambda.
        let forged = Request::builder()
            .uri("/a2a")
            .header("x-amz-security-token", "t")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        assert_eq!(
            IamAuthenticator.authenticate_now(&forged),
            Err(AuthError::NoIamIdentity)
        );
    }

    #[test]
    fn role_sessions_are_their_role() {
        assert_eq!(
            without_session("arn:aws-cn:sts::1:assumed-role/r/s"),
            "arn:aws-cn:sts::1:assumed-role/r"
        );
        assert_eq!(
            without_session("arn:aws:sts::1:assumed-role/r"),
            "arn:aws:sts::1:assumed-role/r"
        );
        assert_eq!(without_session("AROAXYZ:session"), "AROAXYZ");
        assert_eq!(without_session("AIDAXYZ"), "AIDAXYZ");
        assert_eq!(
            without_session("arn:aws:iam::1:user/u"),
            "arn:aws:iam::1:user/u"
        );
    }
}
