-- What a compute node's CPU is, as libvirt's capabilities describe it (arch, model, vendor,
-- topology, features): os-hypervisors shows it as cpu_info, as Nova's libvirt driver does.
ALTER TABLE compute_nodes ADD COLUMN cpu_info jsonb NOT NULL DEFAULT '{}';
