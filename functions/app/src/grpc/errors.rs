//! An `AppError` as a gRPC status: the code from the error table's gRPC column
//! (`ErrorKind::wire().grpc`), the client message, and a `google.rpc.ErrorInfo` (reason, domain
//! `a2a-protocol.org`, metadata) in `grpc-status-details-bin`.

use std::collections::HashMap;

use taskledger_domain::error::{ErrorTable, ERROR_DOMAIN};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};
use tracing::{debug, error};

use crate::error::AppError;

/// The canonical gRPC code named in the table (`NOT_FOUND`, `FAILED_PRECONDITION`, …); a name
/// that is no canonical code is `UNKNOWN`.
pub fn code_named(name: &str) -> Code {
    match name {
        "OK" => Code::Ok,
        "CANCELLED" => Code::Cancelled,
        "UNKNOWN" => Code::Unknown,
        "INVALID_ARGUMENT" => Code::InvalidArgument,
        "DEADLINE_EXCEEDED" => Code::DeadlineExceeded,
        "NOT_FOUND" => Code::NotFound,
        "ALREADY_EXISTS" => Code::AlreadyExists,
        "PERMISSION_DENIED" => Code::PermissionDenied,
        "RESOURCE_EXHAUSTED" => Code::ResourceExhausted,
        "FAILED_PRECONDITION" => Code::FailedPrecondition,
        "ABORTED" => Code::Aborted,
        "OUT_OF_RANGE" => Code::OutOfRange,
        "UNIMPLEMENTED" => Code::Unimplemented,
        "INTERNAL" => Code::Internal,
        "UNAVAILABLE" => Code::Unavailable,
        "DATA_LOSS" => Code::DataLoss,
        "UNAUTHENTICATED" => Code::Unauthenticated,
        _ => Code::Unknown,
    }
}

/// The status a client sees for `e` under table revision `table`; logged like the HTTP
/// bindings log their failures.
pub fn status(e: &AppError, table: ErrorTable) -> Status {
    let wire = e.kind().wire_for(table);
    if e.is_server_side() {
        error!(error = %e, reason = wire.reason, "request failed");
    } else {
        debug!(error = %e, reason = wire.reason, "request refused");
    }
    let metadata: HashMap<String, String> = e.metadata().into_iter().collect();
    Status::with_error_details(
        code_named(wire.grpc),
        e.client_message(),
        ErrorDetails::with_error_info(wire.reason, ERROR_DOMAIN, metadata),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskledger_domain::error::ErrorKind;

    #[test]
    fn every_kind_of_the_table_names_a_canonical_code() {
        for kind in ErrorKind::ALL {
            assert_ne!(code_named(kind.wire().grpc), Code::Unknown, "{kind:?}");
        }
    }

    #[test]
    fn a_status_carries_the_table_code_and_an_error_info() {
        let s = status(&AppError::task_not_found("t-1"), ErrorTable::default());
        assert_eq!(s.code(), Code::NotFound);
        assert_eq!(s.message(), "task t-1 not found");
        let info = s.get_details_error_info().expect("ErrorInfo");
        assert_eq!(info.reason, "TASK_NOT_FOUND");
        assert_eq!(info.domain, "a2a-protocol.org");
        assert_eq!(info.metadata["taskId"], "t-1");
    }

    #[test]
    fn our_own_faults_keep_their_details_to_themselves() {
        let s = status(
            &AppError::protocol(ErrorKind::Internal, "disk on fire"),
            ErrorTable::default(),
        );
        assert_eq!(s.code(), Code::Internal);
        assert_eq!(s.message(), "Internal error");
    }
}
