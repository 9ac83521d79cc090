//! The one place where core errors become Python exceptions, and the one helper every core call
//! that scales with its input goes through ([`run`]: GIL released, error mapped). The classes are
//! defined in `mqbalance/exceptions.py` and imported here, so they have docstrings and pickle.

use std::convert::Infallible;

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

/// Every error the core returns: one `From` per source, one mapping to Python ([`From<CoreError>
/// for PyErr`](#impl-From<CoreError>-for-PyErr)).
pub enum CoreError {
    /// Queue allocation.
    Allocate(AllocateError),
    /// Producer fault tolerance.
    Fault(FaultError),
    /// Java's sticky userData codec.
    UserData(UserDataError),
}

impl From<AllocateError> for CoreError {
    fn from(e: AllocateError) -> Self {
        CoreError::Allocate(e)
    }
}

impl From<FaultError> for CoreError {
    fn from(e: FaultError) -> Self {
        CoreError::Fault(e)
    }
}

impl From<UserDataError> for CoreError {
    fn from(e: UserDataError) -> Self {
        CoreError::UserData(e)
    }
}

impl From<Infallible> for CoreError {
    fn from(e: Infallible) -> Self {
        match e {}
    }
}

impl From<CoreError> for PyErr {
    fn from(e: CoreError) -> Self {
        match e {
            CoreError::Allocate(e) => allocate_to_py(e),
            CoreError::Fault(e) => fault_to_py(e),
            CoreError::UserData(e) => user_data_to_py(e),
        }
    }
}

/// The binding's one call pattern: run the core call `f` with the GIL released (its inputs
/// already extracted into owned data) and map its error to the Python class. A call that cannot
/// fail returns [`ok`]`(value)`.
pub fn run<T, E>(py: Python<'_>, f: impl FnOnce() -> Result<T, E> + Ungil) -> PyResult<T>
where
    E: Into<CoreError>,
    Result<T, E>: Ungil,
{
    py.detach(f).map_err(|e| PyErr::from(e.into()))
}

/// The result of a core call that cannot fail, for [`run`].
#[allow(clippy::unnecessary_wraps)] // the wrap is the point: `run` takes results
pub fn ok<T>(value: T) -> Result<T, Infallible> {
    Ok(value)
}

/// Map an allocation error to its Python class, with the offending value attached.
fn allocate_to_py(e: AllocateError) -> PyErr {
    let msg = e.to_string();
    match e {
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

/// Extension trait: `.py_err()?` on the results of short core calls made with the GIL held
/// (constructors, single updates); anything that scales with its input goes through [`run`].
pub trait IntoPyResult<T> {
    /// Convert the error side.
    fn py_err(self) -> PyResult<T>;
}

impl<T, E: Into<CoreError>> IntoPyResult<T> for Result<T, E> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(|e| PyErr::from(e.into()))
    }
}

pyo3::import_exception!(mqbalance.exceptions, InvalidLatencyError);
pyo3::import_exception!(mqbalance.exceptions, LatencyTableError);
pyo3::import_exception!(mqbalance.exceptions, EmptyRouteError);
pyo3::import_exception!(mqbalance.exceptions, UnknownBrokerError);
pyo3::import_exception!(mqbalance.exceptions, InvalidSimulationError);
pyo3::import_exception!(mqbalance.exceptions, ResourceLimitError);

/// Map a fault-tolerance error to its Python class.
fn fault_to_py(e: FaultError) -> PyErr {
    use FaultError as F;
    let msg = e.to_string();
    match e {
        F::NegativeLatency(v) => InvalidLatencyError::new_err((msg, v)),
        F::TableLengthMismatch { durations, .. } => LatencyTableError::new_err((msg, durations)),
        F::TableNotSorted { value, .. } => LatencyTableError::new_err((msg, value)),
        F::EmptyRoute { topic } => EmptyRouteError::new_err((msg, topic)),
        F::InvalidQueueData { value, .. } => InvalidQueueError::new_err((msg, value)),
        F::UnknownBroker(b) => UnknownBrokerError::new_err((msg, b)),
        F::InvalidSimulation { name, .. } => InvalidSimulationError::new_err((msg, name)),
        F::TooLarge { value, .. } => ResourceLimitError::new_err((msg, value)),
    }
}

/// Map a userData codec error: an input error, carrying the topic when one is too long (decoding
/// errors do not reach Python: undecodable userData reads as "no previous assignment").
fn user_data_to_py(e: UserDataError) -> PyErr {
    let msg = e.to_string();
    match e {
        UserDataError::TopicTooLong { topic, .. } => InvalidInputError::new_err((msg, topic)),
        UserDataError::Empty
        | UserDataError::Truncated { .. }
        | UserDataError::NegativeLength { .. }
        | UserDataError::InvalidUtf8 { .. }
        | UserDataError::TrailingBytes { .. }
        | UserDataError::TooMany { .. } => InvalidInputError::new_err((msg, None::<String>)),
    }
}
