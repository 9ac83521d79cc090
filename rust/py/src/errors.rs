//! The one place where core errors become Python exceptions. The classes are defined in
//! `mqbalance/exceptions.py` and imported here, so they have docstrings and pickle.

use mqbalance_core::AllocateError;
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

/// Map a core error to its Python class, with the offending value attached.
pub fn to_py(e: AllocateError) -> PyErr {
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

/// Extension trait: `.py_err()?` on core results.
pub trait IntoPyResult<T> {
    /// Convert the error side.
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, AllocateError> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

pyo3::import_exception!(mqbalance.exceptions, InvalidLatencyError);
pyo3::import_exception!(mqbalance.exceptions, LatencyTableError);
pyo3::import_exception!(mqbalance.exceptions, EmptyRouteError);
pyo3::import_exception!(mqbalance.exceptions, UnknownBrokerError);
pyo3::import_exception!(mqbalance.exceptions, InvalidSimulationError);
pyo3::import_exception!(mqbalance.exceptions, ResourceLimitError);

/// Map a fault-tolerance core error to its Python class.
pub fn fault_to_py(e: mqbalance_core::fault::FaultError) -> PyErr {
    use mqbalance_core::fault::FaultError as F;
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

impl<T> IntoPyResult<T> for Result<T, mqbalance_core::fault::FaultError> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(fault_to_py)
    }
}
