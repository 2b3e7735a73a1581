// Depending on OperationQueuing alone gives the whole of AtomicPrimitives too.
@_exported import AtomicPrimitives
