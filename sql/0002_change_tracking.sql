-- Change tracking of the feedrouter catalog (run by migration 0002; do not edit once released:
-- a change goes into a new file run by a new migration).
--
-- Any INSERT, UPDATE or DELETE of subscriptions, subscribers, feeds or DTDs that can change what a
-- feed's plan is built from bumps feedrouter.catalog_versions.version of every affected feed (once
-- per transaction, in that transaction), and NOTIFYs channel 'feedrouter_catalog' with the feed's
-- name (delivered at commit). It works for plain SQL as well as for the ORM.
--
-- The triggers are statement-level with transition tables, so a bulk INSERT of 100,000
-- subscriptions bumps each feed once, not 100,000 times. An UPDATE bumps only when a column the
-- build reads changed: the status columns a plan build writes back do not count, and neither does
-- updated_at.

CREATE FUNCTION feedrouter.bump_catalog_versions(feed_names text[]) RETURNS void
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
DECLARE
    feed text;
BEGIN
    -- Sorted, so two transactions bumping the same feeds lock their rows in the same order.
    FOR feed IN SELECT DISTINCT f FROM unnest(feed_names) AS f WHERE f IS NOT NULL ORDER BY f LOOP
        -- Once per feed and transaction: nobody sees a transaction's changes before its commit, so
        -- one bump covers all of them. It also keeps a client that sends 100,000 single-row INSERTs
        -- (executemany) from stacking 100,000 versions of one row, each slower to reach.
        INSERT INTO feedrouter.catalog_versions AS cv (feed_name, version, changed_at)
        VALUES (feed, 1, now())
        ON CONFLICT (feed_name) DO UPDATE SET version = cv.version + 1, changed_at = now()
            WHERE NOT (cv.xmin = pg_current_xact_id()::xid);
        IF FOUND THEN
            PERFORM pg_notify('feedrouter_catalog', feed);
        END IF;
    END LOOP;
END;
$$;

-- subscriptions: the feeds of the inserted, deleted or meaningfully updated rows (old and new feed
-- when a subscription moves).
CREATE FUNCTION feedrouter.track_subscriptions() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name FROM new_rows n JOIN feedrouter.feeds f ON f.id = n.feed_id));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name FROM old_rows o JOIN feedrouter.feeds f ON f.id = o.feed_id));
    ELSE
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name
            FROM old_rows o
            FULL JOIN new_rows n ON n.id = o.id
            JOIN feedrouter.feeds f ON f.id = o.feed_id OR f.id = n.feed_id
            WHERE o.id IS NULL OR n.id IS NULL
               OR (o.subscriber_id, o.feed_id, o.name, o.query, o.active)
                  IS DISTINCT FROM (n.subscriber_id, n.feed_id, n.name, n.query, n.active)));
    END IF;
    RETURN NULL;
END;
$$;

-- subscribers: every feed one of their subscriptions is on.
CREATE FUNCTION feedrouter.track_subscribers() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        RETURN NULL;  -- a new subscriber has no subscription yet
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name FROM old_rows o
            JOIN feedrouter.subscriptions s ON s.subscriber_id = o.id
            JOIN feedrouter.feeds f ON f.id = s.feed_id));
    ELSE
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name
            FROM old_rows o
            FULL JOIN new_rows n ON n.id = o.id
            JOIN feedrouter.subscriptions s ON s.subscriber_id = o.id OR s.subscriber_id = n.id
            JOIN feedrouter.feeds f ON f.id = s.feed_id
            WHERE o.id IS NULL OR n.id IS NULL
               OR (o.name, o.output_prefix, o.active) IS DISTINCT FROM (n.name, n.output_prefix, n.active)));
    END IF;
    RETURN NULL;
END;
$$;

-- feeds: the feed itself (both names when it is renamed).
CREATE FUNCTION feedrouter.track_feeds() RETURNS trigger
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

-- dtds: every feed that uses the DTD.
CREATE FUNCTION feedrouter.track_dtds() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        RETURN NULL;  -- no feed uses a DTD that did not exist
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name FROM old_rows o JOIN feedrouter.feeds f ON f.dtd_id = o.id));
    ELSE
        PERFORM feedrouter.bump_catalog_versions(ARRAY(
            SELECT f.name
            FROM old_rows o
            FULL JOIN new_rows n ON n.id = o.id
            JOIN feedrouter.feeds f ON f.dtd_id = o.id OR f.dtd_id = n.id
            WHERE o.id IS NULL OR n.id IS NULL
               OR (o.name, o.root_element, o.text) IS DISTINCT FROM (n.name, n.root_element, n.text)));
    END IF;
    RETURN NULL;
END;
$$;

-- Transition tables allow one event per trigger, hence three triggers per table.
CREATE TRIGGER track_insert AFTER INSERT ON feedrouter.subscriptions
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_subscriptions();
CREATE TRIGGER track_update AFTER UPDATE ON feedrouter.subscriptions
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_subscriptions();
CREATE TRIGGER track_delete AFTER DELETE ON feedrouter.subscriptions
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_subscriptions();

CREATE TRIGGER track_insert AFTER INSERT ON feedrouter.subscribers
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_subscribers();
CREATE TRIGGER track_update AFTER UPDATE ON feedrouter.subscribers
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_subscribers();
CREATE TRIGGER track_delete AFTER DELETE ON feedrouter.subscribers
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_subscribers();

CREATE TRIGGER track_insert AFTER INSERT ON feedrouter.feeds
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_feeds();
CREATE TRIGGER track_update AFTER UPDATE ON feedrouter.feeds
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_feeds();
CREATE TRIGGER track_delete AFTER DELETE ON feedrouter.feeds
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_feeds();

CREATE TRIGGER track_insert AFTER INSERT ON feedrouter.dtds
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_dtds();
CREATE TRIGGER track_update AFTER UPDATE ON feedrouter.dtds
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_dtds();
CREATE TRIGGER track_delete AFTER DELETE ON feedrouter.dtds
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_dtds();

-- TRUNCATE fires no row or INSERT/DELETE trigger; it changes every feed that is left.
CREATE FUNCTION feedrouter.track_truncate() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    PERFORM feedrouter.bump_catalog_versions(ARRAY(SELECT f.name FROM feedrouter.feeds f));
    RETURN NULL;
END;
$$;

CREATE TRIGGER track_truncate AFTER TRUNCATE ON feedrouter.subscriptions
    FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_truncate();
CREATE TRIGGER track_truncate AFTER TRUNCATE ON feedrouter.subscribers
    FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_truncate();
CREATE TRIGGER track_truncate AFTER TRUNCATE ON feedrouter.dtds
    FOR EACH STATEMENT EXECUTE FUNCTION feedrouter.track_truncate();

-- updated_at for plain-SQL updates (the ORM sets it itself). On subscriptions a changed text or
-- activity also resets the status: what the last build said is no longer about this text.
CREATE FUNCTION feedrouter.touch_updated_at() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    NEW.updated_at := now();
    RETURN NEW;
END;
$$;

CREATE FUNCTION feedrouter.subscription_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = feedrouter, pg_catalog
AS $$
BEGIN
    NEW.updated_at := now();
    IF NEW.query IS DISTINCT FROM OLD.query OR NEW.active IS DISTINCT FROM OLD.active THEN
        NEW.status := 'pending';
        NEW.error_code := NULL;
        NEW.error_message := NULL;
        NEW.error_line := NULL;
        NEW.error_column := NULL;
        NEW.plan_text := NULL;
    END IF;
    RETURN NEW;
END;
$$;

CREATE TRIGGER touch_updated_at BEFORE UPDATE ON feedrouter.subscriptions FOR EACH ROW
    WHEN ((OLD.subscriber_id, OLD.feed_id, OLD.name, OLD.query, OLD.active)
          IS DISTINCT FROM (NEW.subscriber_id, NEW.feed_id, NEW.name, NEW.query, NEW.active))
    EXECUTE FUNCTION feedrouter.subscription_changed();
CREATE TRIGGER touch_updated_at BEFORE UPDATE ON feedrouter.subscribers FOR EACH ROW
    WHEN ((OLD.name, OLD.output_prefix, OLD.active) IS DISTINCT FROM (NEW.name, NEW.output_prefix, NEW.active))
    EXECUTE FUNCTION feedrouter.touch_updated_at();
CREATE TRIGGER touch_updated_at BEFORE UPDATE ON feedrouter.feeds FOR EACH ROW
    WHEN ((OLD.name, OLD.input_prefix, OLD.layout, OLD.record_element, OLD.quarantine_prefix, OLD.dtd_id,
           OLD.active)
          IS DISTINCT FROM (NEW.name, NEW.input_prefix, NEW.layout, NEW.record_element, NEW.quarantine_prefix,
           NEW.dtd_id, NEW.active))
    EXECUTE FUNCTION feedrouter.touch_updated_at();
CREATE TRIGGER touch_updated_at BEFORE UPDATE ON feedrouter.dtds FOR EACH ROW
    WHEN ((OLD.name, OLD.root_element, OLD.text) IS DISTINCT FROM (NEW.name, NEW.root_element, NEW.text))
    EXECUTE FUNCTION feedrouter.touch_updated_at();
