-- A security group rule's remote_ip_prefix is kept as the client wrote it, host bits included
-- ("10.2.3.124/24"), as Neutron keeps and shows it; its network ("10.2.3.0/24", Neutron's
-- normalized_cidr) is what the data plane filters on and what duplicates are judged by.
ALTER TABLE security_group_rules ALTER COLUMN remote_ip_prefix TYPE inet USING remote_ip_prefix::inet;
