// The umbrella: one import for the five modules of ConcurrencyKit.
@_exported import AtomicPrimitives
@_exported import CallbackRouting
@_exported import DispatchKit
@_exported import OperationQueuing
@_exported import SafeValueCore
