//! The one place where core errors become Python exceptions, and the one helper every core call
//! that scales with its input goes through ([`run`]: GIL released, error mapped). The classes are
//! defined in `mqbalance/exceptions.py` and imported here, so they have docstrings and pickle.

use std::convert::Infallible;

use mqbalance_core::assign::server::ServerAssignError;
use mqbalance_core::assign::user_data::UserDataError;
use mqbalance_core::fault::FaultError;
use mqbalance_core::AllocateError;
use pyo3::marker::Ungil;
use pyo3::prelude::*;

pyo3::import_exception!(mqbalance.exceptions, EmptyCurrentIdError);
pyo3::import_exception!(mqbalance.exceptions, EmptyQueuesError);
pyo3::import_exception!(mqbalance.exceptions, EmptyConsumersError);
pyo3::import_exception!(mqbalance.exceptions, VirtualNodeCountError);
pyo3::import_exception!(mqbalance.exceptions, RingTooLargeError);
pyo3::import_exception!(mqbalance.exceptions, ConsumerIdcsNotSetError);
pyo3::import_exception!(mqbalance.exceptions, MachineRoomError);
pyo3::import_exception!(mqbalance.exceptions, UnsupportedStrategyError);
pyo3::import_exception!(mqbalance.exceptions, InvalidQueueError);
pyo3::import_exception!(mqbalance.exceptions, InvalidClientIdError);
pyo3::import_exception!(mqbalance.exceptions, LengthMismatchError);
pyo3::import_exception!(mqbalance.exceptions, UnknownStrategyError);
pyo3::import_exception!(mqbalance.exceptions, UnknownCharsetError);
pyo3::import_exception!(mqbalance.exceptions, InvalidInputError);
pyo3::import_exception!(mqbalance.exceptions, InvalidEpsilonError);
pyo3::import_exception!(mqbalance.exceptions, EpsilonTooSmallError);
pyo3::import_exception!(mqbalance.exceptions, PreviousAssignmentRequiredError);

/// An error type of the core, and the Python exception it becomes (the offending value attached).
/// Implemented once per core error enum, below; every match is exhaustive, so a new variant does
/// not compile until it is mapped.
pub trait CoreError {
    /// The Python exception.
    fn into_py(self) -> PyErr;
}

impl CoreError for Infallible {
    fn into_py(self) -> PyErr {
        match self {}
    }
}

/// The binding's one call pattern: run the core call `f` with the GIL released (its inputs
/// already extracted into owned data) and map its error to the Python class. A call that cannot
/// fail returns [`ok`]`(value)`.
pub fn run<T, E>(py: Python<'_>, f: impl FnOnce() -> Result<T, E> + Ungil) -> PyResult<T>
where
    E: CoreError,
    Result<T, E>: Ungil,
{
    py.detach(f).py_err()
}

/// The result of a core call that cannot fail, for [`run`].
#[allow(clippy::unnecessary_wraps)] // the wrap is the point: `run` takes results
pub fn ok<T>(value: T) -> Result<T, Infallible> {
    Ok(value)
}

impl CoreError for AllocateError {
    fn into_py(self) -> PyErr {
        let msg = self.to_string();
        match self {
            AllocateError::EmptyCurrentId => EmptyCurrentIdError::new_err((msg, ())),
            AllocateError::EmptyQueues => EmptyQueuesError::new_err((msg, ())),
            AllocateError::EmptyConsumers => EmptyConsumersError::new_err((msg, ())),
            AllocateError::IllegalVirtualNodeCnt(v) => VirtualNodeCountError::new_err((msg, v)),
            AllocateError::RingTooLarge {
                virtual_node_cnt, ..
            } => RingTooLargeError::new_err((msg, virtual_node_cnt)),
            AllocateError::ConsumerIdcsNotSet { broker } => {
                ConsumerIdcsNotSetError::new_err((msg, broker))
            }
            AllocateError::EmptyQueueRoom { queue } => MachineRoomError::new_err((msg, queue)),
            AllocateError::EmptyConsumerRoom { client_id } => {
                MachineRoomError::new_err((msg, client_id))
            }
            AllocateError::UnknownStrategy { name } => UnknownStrategyError::new_err((msg, name)),
            AllocateError::MissingInner { name } => UnsupportedStrategyError::new_err((msg, name)),
            AllocateError::UnsupportedStrategy { name, .. } => {
                UnsupportedStrategyError::new_err((msg, name))
            }
            AllocateError::InvalidEpsilon { bits } => {
                InvalidEpsilonError::new_err((msg, f64::from_bits(bits)))
            }
            AllocateError::EpsilonTooSmall { bits } => {
                EpsilonTooSmallError::new_err((msg, f64::from_bits(bits)))
            }
            AllocateError::PreviousRequired { name } => {
                PreviousAssignmentRequiredError::new_err((msg, name))
            }
            AllocateError::InvalidCode { code, .. } => InvalidQueueError::new_err((msg, code)),
            AllocateError::LengthMismatch { got, .. } => LengthMismatchError::new_err((msg, got)),
            AllocateError::InvalidBounds { reason } => InvalidInputError::new_err((msg, reason)),
        }
    }
}

/// Extension trait: `.py_err()?` on the results of short core calls made with the GIL held
/// (constructors, single updates); anything that scales with its input goes through [`run`].
pub trait IntoPyResult<T> {
    /// Convert the error side.
    fn py_err(self) -> PyResult<T>;
}

impl<T, E: CoreError> IntoPyResult<T> for Result<T, E> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(CoreError::into_py)
    }
}

pyo3::import_exception!(mqbalance.exceptions, InvalidLatencyError);
pyo3::import_exception!(mqbalance.exceptions, LatencyTableError);
pyo3::import_exception!(mqbalance.exceptions, EmptyRouteError);
pyo3::import_exception!(mqbalance.exceptions, UnknownBrokerError);
pyo3::import_exception!(mqbalance.exceptions, InvalidSimulationError);
pyo3::import_exception!(mqbalance.exceptions, ResourceLimitError);

impl CoreError for FaultError {
    fn into_py(self) -> PyErr {
        use FaultError as F;
        let msg = self.to_string();
        match self {
            F::NegativeLatency(v) => InvalidLatencyError::new_err((msg, v)),
            F::TableLengthMismatch { durations, .. } => {
                LatencyTableError::new_err((msg, durations))
            }
            F::TableNotSorted { value, .. } => LatencyTableError::new_err((msg, value)),
            F::EmptyRoute { topic } => EmptyRouteError::new_err((msg, topic)),
            F::InvalidQueueData { value, .. } => InvalidQueueError::new_err((msg, value)),
            F::UnknownBroker(b) => UnknownBrokerError::new_err((msg, b)),
            F::InvalidSimulation { name, .. } => InvalidSimulationError::new_err((msg, name)),
            F::TooLarge { value, .. } => ResourceLimitError::new_err((msg, value)),
        }
    }
}

/// An input error, carrying the topic when one is too long (decoding errors do not reach Python:
/// the binding reads userData through the core's `user_data::previous_assignment`, Java's rule that
/// undecodable userData is no previous assignment).
impl CoreError for UserDataError {
    fn into_py(self) -> PyErr {
        let msg = self.to_string();
        match self {
            UserDataError::TopicTooLong { topic, .. } => InvalidInputError::new_err((msg, topic)),
            UserDataError::Empty
            | UserDataError::Truncated { .. }
            | UserDataError::NegativeLength { .. }
            | UserDataError::InvalidUtf8 { .. }
            | UserDataError::TrailingBytes { .. }
            | UserDataError::TooMany { .. } => InvalidInputError::new_err((msg, None::<String>)),
        }
    }
}

pyo3::import_exception!(mqbalance.exceptions, PartitionAssignorError);

/// The broker-side assignors' errors: a failure of Kafka's own assignor logic is
/// `PartitionAssignorError` (Java's exception), bad input `InvalidInputError`.
impl CoreError for ServerAssignError {
    fn into_py(self) -> PyErr {
        let msg = self.to_string();
        match self {
            ServerAssignError::Assignor { .. } => PartitionAssignorError::new_err((msg, ())),
            ServerAssignError::DuplicateMember(id) => InvalidInputError::new_err((msg, id)),
            ServerAssignError::DuplicateTopic { topic, .. }
            | ServerAssignError::OwnedTwice { topic, .. }
            | ServerAssignError::PartitionOutOfRange { topic, .. } => {
                InvalidInputError::new_err((msg, topic.to_string()))
            }
            ServerAssignError::TopicIndex(t) => InvalidInputError::new_err((msg, t)),
            ServerAssignError::TooManyPartitions(n) => InvalidInputError::new_err((msg, n)),
            ServerAssignError::MemberIds { ids, .. } => InvalidInputError::new_err((msg, ids)),
        }
    }
}
