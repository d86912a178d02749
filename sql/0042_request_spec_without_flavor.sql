-- An instance's flavor is kept once: in instances.flavor (and a migration's old_flavor and
-- new_flavor). The request spec beside it no longer restates the flavor's id, sizes and
-- extra specs; whoever reads a spec puts them back from the flavor (RequestSpec.from_stored).
UPDATE instances
   SET request_spec = request_spec - ARRAY['flavor_id', 'vcpus', 'memory_mb', 'root_gb', 'ephemeral_gb',
                                           'swap_mb', 'extra_specs']
 WHERE request_spec ?| ARRAY['flavor_id', 'vcpus', 'memory_mb'];
UPDATE migrations
   SET old_request_spec = old_request_spec - ARRAY['flavor_id', 'vcpus', 'memory_mb', 'root_gb', 'ephemeral_gb',
                                                   'swap_mb', 'extra_specs']
 WHERE old_request_spec ?| ARRAY['flavor_id', 'vcpus', 'memory_mb'];
