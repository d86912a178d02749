"""Nova's versioned notifications: what happened to an instance, a service or a volume, as a
stable, versioned record for other systems (Ceilometer, Watcher), for hooks and for a file.

`payloads` turns our rows into Nova's versioned objects (`nova_object.name/namespace/version/
data`); the same payload is what a hook is given, never an internal object."""
