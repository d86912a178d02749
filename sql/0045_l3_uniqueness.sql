-- What the router, floating IP and provider network API promises, held by the database even
-- when two requests race: a fixed IP has at most one floating IP per external network, and a
-- physical network carries at most one flat network (Neutron's FlatNetworkInUse).
CREATE UNIQUE INDEX floatingips_one_per_fixed_ip ON floatingips (floating_network_id, port_id, fixed_ip_address)
    WHERE port_id IS NOT NULL;

CREATE UNIQUE INDEX networks_one_flat_per_physnet ON networks (provider_physical_network)
    WHERE provider_network_type = 'flat';
