#!/bin/bash
# net.topology.script.file.name: prints one rack per argument (host name or address) from the table that
# yarnrl-daemon writes from YARNRL_TOPOLOGY; unknown names get /default-rack, as Hadoop's ScriptBasedMapping expects.
table=/opt/hadoop/etc/hadoop/topology.table
for name in "$@"; do
  rack=$(awk -v n="$name" '$1 == n { print $2; exit }' "$table" 2>/dev/null)
  echo "${rack:-/default-rack}"
done
