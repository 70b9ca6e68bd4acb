-- Every node hears of an identity file another one published (gateway/cluster/identity.ts), as of any cached table.
CREATE TRIGGER changes_cluster_files AFTER INSERT OR UPDATE OR DELETE ON cluster_files FOR EACH ROW EXECUTE FUNCTION publish_change('path');
