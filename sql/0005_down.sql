-- Undo sql/0005_feed_settings_tracking.sql: track_feeds as sql/0002_change_tracking.sql made it.

-- feeds: the feed itself (both names when it is renamed).
CREATE OR REPLACE FUNCTION feedrouter.track_feeds() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(SELECT n.name FROM new_rows n));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(SELECT o.name FROM old_rows o));
    ELSE
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT unnest(ARRAY[o.name, n.name])
            FROM old_rows o
            FULL JOIN new_rows n ON n.id = o.id
            WHERE o.id IS NULL OR n.id IS NULL
               OR (o.name, o.input_prefix, o.layout, o.record_element, o.quarantine_prefix, o.dtd_id, o.active)
                  IS DISTINCT FROM
                  (n.name, n.input_prefix, n.layout, n.record_element, n.quarantine_prefix, n.dtd_id, n.active)));
    END IF;
    RETURN NULL;
END;
$$;
