"""POP consumption (5.x): the broker remembers what each group popped and is not acked yet. One core
(`service.PopService`) serves the remoting requests (broker/handlers/pop_message.py) and the gRPC endpoint."""
