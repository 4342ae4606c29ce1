"""The service proxy: Services' virtual IPs become iptables rules on each node."""
